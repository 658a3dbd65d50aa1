"""Fixture scopes that mutation testing can see through.

mutmut (`make mutate`) first records which tests call each function, then runs only those tests against the
function's mutants. A shared (module or session) fixture's work is recorded for the first test that set it up,
so the other tests that read its result never run against a mutant of the code that built it: a wrong trainer
was checked by one test instead of twenty. Under mutation testing (mutmut sets MUTANT_UNDER_TEST) these
fixtures are rebuilt for every test; otherwise they are shared as their scope says."""
from __future__ import annotations

import os


def shared(scope: str):
    def choose(fixture_name: str, config) -> str:
        return "function" if "MUTANT_UNDER_TEST" in os.environ else scope
    return choose
