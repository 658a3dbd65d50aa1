"""The thin core: the task (data, split, pools, exact sets), the model, the loss, the training loop with its named
extension points (`trainer`), checkpoints, the run folder and evaluation. It imports nothing from the other folders."""
