"""`bench --eval --code`'s suite: the plain evaluation suite with a javascript and a python check on every cell,
which pass on a plain answer (the bench itself is run by hand: it takes minutes)."""

from app.bench.eval_code import write_code_suite
from app.evaluate import load_config
from app.evaluate.check_types import Output
from app.evaluate.code_checks import CodeRunner
from app.evaluate.scoring import CellGrader
from app.models import default_model_path


def test_the_code_suite_has_both_checks_on_every_cell_and_they_pass_on_an_answer(tmp_path):
    suite = load_config(write_code_suite(tmp_path, default_model_path()))
    assert len(suite.cases) * len(suite.variants) == 96
    assert [line.split(" (inline)")[0] for line in suite.code] == ["javascript assertion", "python assertion"]
    runner = CodeRunner(tmp_path)
    try:
        grader = CellGrader(suite.cases[0], Output("Rivers flow to the sea."), "", code=runner)
        assert grader.start() == [] and grader.result().passed
    finally:
        runner.close()
