"""assign-add: reproduction of "Assign and Add: A Mechanistic Study of Compositional Arithmetic"."""
# No OpenMP setting here: a passive wait policy made a 2-thread training step 2-3x slower. Only a
# sweep's single-thread workers, which share the cores, wait passively (see `sweep`).
