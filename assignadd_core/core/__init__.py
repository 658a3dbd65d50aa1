"""The thin core: the task (data, split, pools, exact sets), the model, the loss, the training loop with its named
extension points (`trainer`), checkpoints and the run folder, evaluation, the study profiles. It imports nothing from
the other folders."""
