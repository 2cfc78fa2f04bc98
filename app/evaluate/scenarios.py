"""`scenarios`: groups of data crossed with tests, as promptfoo's evaluator builds them (src/evaluator.ts).

`scenarios` is a list (or one) of `{description, config: [data…], tests: [test…]}`, or `file://` paths to YAML or
JSON files holding such scenarios. For each scenario, for each data item of its `config`, for each of its tests
(one empty test when it has none) a test is made: the data's keys under the test's, vars and metadata merged
(the test's win), assertions the data's then the test's; its options are the test's alone (promptfoo drops the
data's). These tests come after `tests`; a config with scenarios and no `tests` has no empty test of its own.
`defaultTest` is then merged into them as into any test, and their vars expand the same way.
"""

from __future__ import annotations

from pathlib import Path

from app.evaluate import case_files
from app.evaluate.errors import Problems


def _loaded(value, base: Path, problems: Problems) -> list:
    found = []
    for index, item in enumerate(value if isinstance(value, list) else [value]):
        if isinstance(item, str) and item.startswith("file://"):
            items = case_files.read_test_file(base / item[len("file://"):], problems)
            found += [(f"{item} scenario {i + 1}", scenario) for i, scenario in enumerate(items)]
        else:
            found.append((f"scenarios[{index}]", item))
    return found


def _mapping(test: dict, key: str) -> dict:
    return test[key] if isinstance(test.get(key), dict) else {}


def _list(test: dict, key: str) -> list:
    return test[key] if isinstance(test.get(key), list) else []


def scenario_tests(value, base: Path, problems: Problems) -> list[tuple[str, dict]]:
    """(where, test dict) for every test the scenarios make, in promptfoo's order."""
    tests = []
    for where, scenario in _loaded(value, base, problems):
        if not isinstance(scenario, dict) or not isinstance(scenario.get("config"), list):
            problems.add(where, "a scenario is a mapping with a `config` list of data (and `tests`)")
            continue
        unknown = sorted(set(scenario) - {"description", "config", "tests"})
        if unknown:
            problems.add(where, f"unknown scenario key(s) {', '.join(unknown)} (Chorus does not support them)")
        written = scenario.get("tests") or [{}]
        if not isinstance(written, list) or not all(isinstance(t, dict) for t in written):
            problems.unsupported(f"{where}.tests", "a scenario test that is not written inline")
            continue
        for d, data in enumerate(scenario["config"]):
            if not isinstance(data, dict):
                problems.add(f"{where}.config[{d}]", "each data item is a mapping (vars, assert, …)")
                continue
            for t, test in enumerate(written):
                merged = {**data, **test, "vars": {**_mapping(data, "vars"), **_mapping(test, "vars")},
                          "assert": [*_list(data, "assert"), *_list(test, "assert")],
                          "metadata": {**_mapping(data, "metadata"), **_mapping(test, "metadata")}}
                merged.pop("options", None)
                if "options" in test:
                    merged["options"] = test["options"]
                tests.append((f"{where}.config[{d}] × tests[{t}]", merged))
    return tests
