"""Training and experiments on it: the trainer (with the nudges, gradient noise, steering and the early stop
it carries out), stacked runs, the runs' entry points (`runs`), rescue branches, sweeps and the study
drivers (generality, per seed, C10's window, the mode study)."""
