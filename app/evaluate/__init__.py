"""Evaluations: test cases × variants with promptfoo's config format, assertions, judges and outputs. Qt-free.

    suite = load_config("promptfooconfig.yaml")        # raises ConfigError listing every problem
    evaluation = suite.evaluation(repeat=1)            # cases × variants, one CellResult per cell
    prepared = cells.prepare(evaluation, cell)         # rendered prompt + GenerationRequest (or a given output)
    grader = cells.grader(evaluation, cell); grader.start() / grader.reply(...)   # judge calls as requests
    stats.matrix(evaluation, only="failures")          # what a view shows; stats.exit_code(evaluation)
    write_outputs(evaluation, ["results.json", "report.html", "junit.xml", "table.csv"])
"""

from app.evaluate import cells, checks, graders, reports, results_json, scoring, stats, templates
from app.evaluate.case_files import read_vars_file
from app.evaluate.config import Suite, load_config, read_config
from app.evaluate.errors import ConfigError
from app.evaluate.outputs import check_paths, write_outputs
from app.session.evaluation import (
    Assertion,
    BackendTarget,
    CellResult,
    EvalCase,
    Evaluation,
    GradingResult,
    PromptTemplate,
    Variant,
)

__all__ = ["Assertion", "BackendTarget", "CellResult", "ConfigError", "Evaluation", "GradingResult",
           "PromptTemplate", "Suite", "EvalCase", "Variant", "cells", "check_paths", "checks", "graders",
           "load_config", "read_config", "read_vars_file", "reports", "results_json", "scoring", "stats",
           "templates", "write_outputs"]
