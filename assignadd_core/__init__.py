"""assign-add: reproduction of "Assign and Add: A Mechanistic Study of Compositional Arithmetic"."""
import os

# OpenMP threads that spin while waiting collapse throughput when another process shares the
# cores (several times slower on 2 cores); passive waiting costs nothing when the machine is idle.
# Only effective when this package is imported before torch; users can still override it.
os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")
