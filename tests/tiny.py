"""The tiny configuration shared by the tests: N = 7, 4 variables (a left-only, d right-only), a
16-wide model: every code path, no waiting. (A module of its own: `conftest` is an ambiguous name
once the book's chapters folder has a conftest too.)"""
import contextlib

TINY = dict(modulus=7, n_vars=4, n_left_only=1, n_right_only=1, d_model=16, d_mlp=32,
            steps=30, batch_size=32, eval_every=10, probe_every=20, pool_size=50)


@contextlib.contextmanager
def torch_threads(n: int):
    """Tiny models gain nothing from threads, and on a busy machine extra threads cost 5-10x."""
    import torch
    before = torch.get_num_threads()
    torch.set_num_threads(n)
    try:
        yield
    finally:
        torch.set_num_threads(before)
