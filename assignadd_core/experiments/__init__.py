"""Training and experiments on it: this project's training (`training`: the core loop with the nudges, gradient
noise, steering, the early stop and single compiled stages plugged in), stacked runs, the runs' entry points
(`runs`), rescue branches, sweeps and the study drivers (generality, per seed, C10's window, the mode study)."""
