"""The positive control of every final-model rule: the authors' released weights pass it (C2-C7), as they do the
claims those rules test. Skipped where their weights are absent (they are not part of this project)."""
import pytest

from assignadd_core.experiments import per_seed
from assignadd_core.analysis.authors_format import load_tl_state_dict, reference_weights_path
from assignadd_core.rules.verdicts import REPRODUCED

REFERENCE = reference_weights_path()
pytestmark = pytest.mark.skipif(REFERENCE is None or not REFERENCE.is_file(),
                                reason="the authors' released weights are absent (set ASSIGNADD_REFERENCE)")


@pytest.fixture(scope="module")
def authors():
    return load_tl_state_dict(REFERENCE).eval()


@pytest.mark.parametrize("claim", ["C2", "C3", "C4", "C5", "C6", "C7"])
def test_the_authors_weights_pass_every_final_model_rule(claim, authors):
    verdict = per_seed.model_claim(claim, authors)
    assert verdict.verdict == REPRODUCED, verdict.text


def test_the_rule_c7_replaced_fails_the_authors_weights(authors):
    """Why C7 was rewritten: the earlier rule asked for more than the paper claims."""
    assert per_seed.c7_before_2026_12(per_seed.numbers("C7", authors)).verdict != REPRODUCED
