"""nbval settings for the executed chapters (`pytest --nbval-lax book/chapters`).

Lax mode compares only cells marked `# NBVAL_CHECK_OUTPUT`; in those, stderr (progress bars, warnings)
and rich outputs that carry random ids (plotly's HTML divs and JSON, widget views) are not compared.
"""
from nbval.kernel import RunningKernel

SKIP_COMPARE = ("stderr", "text/html", "application/vnd.plotly.v1+json", "application/javascript",
                "application/vnd.jupyter.widget-view+json")


def pytest_collectstart(collector):
    if collector.fspath and collector.fspath.ext == ".ipynb":
        collector.skip_compare = tuple(collector.skip_compare) + SKIP_COMPARE


def _execute_cell_input(self, cell_input, allow_stdin=None):
    return self.kc.execute(cell_input, store_history=True, allow_stdin=allow_stdin, stop_on_error=False)


# nbval executes cells with store_history=False, but each chapter's start_chapter() finds its parameter
# cells in the kernel's input history (`In`), as under papermill and Jupyter; so keep the history.
# (nbval cells are not pytest Functions, so a fixture cannot do this; this conftest only loads for book/chapters.)
RunningKernel.execute_cell_input = _execute_cell_input
