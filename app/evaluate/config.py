"""Read a promptfoo config (promptfooconfig.yaml) into a Suite: prompts, variants, test cases.

Every problem in the file (unknown keys, unsupported providers or assertion types, missing files, bad CSV rows,
template syntax errors) is collected and raised as one ConfigError before anything runs. Order and merging
follow promptfoo's evaluator: `defaultTest` is merged into each test (assertions prepended unless
`options.disableDefaultAsserts`; vars, options and metadata shallow-merged, the test winning; threshold and
providerOutput the test's, else the default's); then vars holding a list whose first item is a string expand to
the cartesian product (first var slowest), unless `options.disableVarExpansion`. No tests means one empty test.
Columns are providers × prompts, provider-major, each provider limited to its `prompts:` labels.
"""

from __future__ import annotations

import itertools
from dataclasses import dataclass, field
from pathlib import Path

import yaml

from app.evaluate import (
    api_keys,
    case_files,
    checks,
    code_checks,
    config_refs,
    derived_metrics,
    graders,
    nunjucks_filters,
    prompts,
    providers,
    rag,
    scenarios,
    similarity,
    simulated_user,
    templates,
    webhook,
)
from app.evaluate.assertion_strings import ASSERTION_TYPES, CHORUS_TYPES
from app.evaluate.errors import Problems
from app.session.eval_config import ConfigFile, ProviderEntry, validate
from app.session.evaluation import Assertion, DerivedMetric, EvalCase, Evaluation, PromptTemplate, Variant

UNSUPPORTED_WHY: dict[str, str] = {}
SUPPORTED = frozenset(checks.CHECKS) | graders.MODEL_GRADED | code_checks.CODE_TYPES | {
    "assert-set", "similar", "webhook", "max-score"}


@dataclass
class Suite:
    """What a config asks for: run it with `evaluation()`."""

    description: str
    source: str
    base_dir: Path
    prompts: list[PromptTemplate]
    variants: list[Variant]
    cases: list[EvalCase]
    output_paths: list[str] = field(default_factory=list)
    max_concurrency: int | None = None
    repeat: int = 1
    notes: list[str] = field(default_factory=list)  # warnings to show once (a written key for a remote server)
    code: list[str] = field(default_factory=list)  # what would run the user's code (code_checks.code_uses)
    derived_metrics: list[DerivedMetric] = field(default_factory=list)
    nunjucks_filters: dict[str, str] = field(default_factory=dict)  # name -> JavaScript file

    def evaluation(self, repeat: int | None = None, judge: str = "local") -> Evaluation:
        return Evaluation(description=self.description, source=self.source, judge=judge,
                          repeat=repeat or self.repeat, cases=self.cases, variants=self.variants,
                          derived_metrics=self.derived_metrics, nunjucks_filters=self.nunjucks_filters)


def check_assertion(assertion: Assertion, where: str, problems: Problems, variants: int, base: Path,
                    any_provider: bool = False) -> None:
    kind = assertion.base_type
    if kind == "assert-set":
        if not assertion.assertions:
            problems.add(where, "an assert-set needs a non-empty `assert` list")
        for j, child in enumerate(assertion.assertions or []):
            if child.base_type in ("assert-set", "select-best", "max-score"):
                problems.add(f"{where}.assert[{j}]", f"{child.type} cannot be nested in an assert-set")
            else:
                check_assertion(child, f"{where}.assert[{j}]", problems, variants, base, any_provider)
        return
    if assertion.assertions is not None:
        problems.add(where, f"`assert` belongs to an assert-set, not to {assertion.type}")
    if kind.startswith("similar:"):
        kind, metric = kind.split(":", 1)
        if metric.split(":")[0] not in similarity.METRICS:
            problems.add(where, f"unknown similarity metric {metric!r}: similar takes :cosine, :dot or :euclidean")
    if kind not in SUPPORTED:
        why = UNSUPPORTED_WHY.get(kind) or ("not a promptfoo assertion type" if kind not in ASSERTION_TYPES
                                            else "not implemented in Chorus")
        problems.unsupported(where, f"the assertion type {assertion.type!r}", why)
    if kind in ("select-best", "max-score") and variants < 2:
        problems.add(where, f"{kind} compares the outputs of a row: it needs at least two variants")
    if kind not in code_checks.CODE_TYPES and isinstance(assertion.value, str) and assertion.value.startswith(
            "file://") and not code_checks.is_script_ref(assertion.value):
        _file_value(assertion, where, problems, base)  # promptfoo's processFileReference: .json/.yaml/.txt
    if kind in code_checks.CODE_TYPES and not isinstance(assertion.value, str):
        problems.add(where, f"a {kind} assertion's value is code or a file:// path")
    if assertion.context_transform is not None and kind not in rag.CONTEXT_TYPES:
        problems.add(where, f"contextTransform belongs to the context-* assertions, not to {assertion.type}")
    script = assertion.value if kind in code_checks.CODE_TYPES else None
    if isinstance(script, str) and script.startswith("file://"):
        path = code_checks.split_file(script, base)[0]
        suffix = {"python": ".py", "ruby": ".rb"}.get(kind)
        if not path.is_file():
            problems.add(where, f"no such file: {path}")
        elif suffix and path.suffix != suffix:
            problems.add(where, f"a {kind} assertion runs a {suffix} file, not {path.name}")
    for script in (assertion.transform, assertion.context_transform):
        if problem := code_checks.transform_problem(script, base):
            problems.add(where, problem)
    for name, text in (("value", assertion.value), ("metric", assertion.metric)):
        for item in (text if isinstance(text, list) else [text]):
            problem = templates.check(item) if isinstance(item, str) else None
            if problem:
                problems.add(f"{where}.{name}", problem)
    for judge in (assertion.provider,):
        _check_judge(judge, f"{where}.provider", problems, base, any_provider,
                     embedder=kind.split(":")[0] == "similar")


def _file_value(assertion: Assertion, where: str, problems: Problems, base: Path) -> None:
    """An assertion value `file://x.json|yaml|yml|txt` becomes the file's data (text trimmed), as promptfoo reads
    it; another kind of file is a problem."""
    path = (base / assertion.value[7:]).resolve()
    if path.suffix.lower() not in (".json", ".yaml", ".yml", ".txt"):
        problems.add(f"{where}.value", f"Unsupported file type: {path}")
        return
    try:
        text = path.read_text(encoding="utf-8")
        assertion.value = text.strip() if path.suffix.lower() == ".txt" else yaml.safe_load(text)
    except (OSError, UnicodeError, yaml.YAMLError) as exc:
        problems.add(f"{where}.value", f"cannot read {path}: {exc}")


def _check_judge(judge, where: str, problems: Problems, base: Path, any_provider: bool = False,
                 embedder: bool = False) -> None:
    """A judge provider as written; with `any_provider` (every provider runs on one model), a judge of any other
    provider id runs on the evaluation's judge (routes.judge_target), with the settings its config gives.
    `embedder`: the provider embeds for `similar`, where a custom JavaScript provider's code is taken."""
    if judge is None:
        return
    judge_id = judge.get("id") if isinstance(judge, dict) else judge
    if judge_id is None and isinstance(judge, dict) and isinstance(judge.get("config"), dict):
        providers.judge_settings(judge, where, problems)  # the evaluation's judge, with these settings
        return
    if not isinstance(judge_id, str):
        problems.add(where, "a judge is a provider id or {id, config}")
        return
    found = providers.parse_id(judge_id, base, any_provider)
    if isinstance(found, str):
        problems.add(where, found)
    elif found[0] == "code" and not (embedder and code_checks.code_embedder(judge_id)):
        problems.unsupported(where, f"a custom provider ({judge_id!r}) as an embedder, unless it is JavaScript,"
                             if embedder else f"a custom provider ({judge_id!r}) as a judge")
    else:
        providers.judge_settings(judge, where, problems)


def merge_default(test: EvalCase, default: EvalCase | None) -> EvalCase:
    if default is None:
        return test
    options = default.options.model_copy(update=test.options.model_dump(exclude_unset=True))
    assertions = test.assertions if options.disable_default_asserts else [*default.assertions, *test.assertions]
    return test.model_copy(update={
        "vars": {**default.vars, **test.vars}, "assertions": assertions, "options": options,
        "metadata": {**default.metadata, **test.metadata},
        "threshold": test.threshold if test.threshold is not None else default.threshold,
        "provider_output": test.provider_output if test.provider_output is not None else default.provider_output,
        "provider": test.provider if test.provider is not None else default.provider,
        "assert_scoring_function": test.assert_scoring_function or default.assert_scoring_function,
        "description": test.description or default.description})


def _text_judge(judge: dict, where: str, problems: Problems):
    """promptfoo's judge map `{text, embedding}`: the `text` provider judges (as a judge given alone would); the
    embedding side is the evaluation's embedder (--embedder, the window's), as for `similar` whatever its
    `provider` says. Other keys are a problem."""
    for key in sorted(set(judge) - {"text", "embedding"}):
        problems.add(where, f"unknown key {key!r} in a judge map: it takes text and embedding")
    embedding = judge.get("embedding")
    if embedding is not None and not isinstance(embedding, (str, dict)):
        problems.add(f"{where}.embedding", "an embedding provider is a provider id or {id, config}")
    return judge.get("text")


def _stash_judge_keys(raw, where: str, problems: Problems):
    """A test (or assertion) dict whose judge providers' written `apiKey`s are moved out (api_keys.stash_key),
    so the stored test never holds a key."""
    if not isinstance(raw, dict):
        return raw
    raw = dict(raw)
    judge = raw.get("provider")
    if isinstance(judge, dict) and "id" not in judge and {"text", "embedding"} & set(judge):
        raw["provider"] = judge = _text_judge(judge, f"{where}.provider", problems)
    if isinstance(judge, dict) and isinstance(judge.get("config"), dict):
        raw["provider"] = {**judge, "config": api_keys.stash_key(judge["config"], f"{where}.provider", problems)}
    if isinstance(raw.get("options"), dict):
        raw["options"] = _stash_judge_keys(raw["options"], f"{where}.options", problems)
    if isinstance(raw.get("assert"), list):
        raw["assert"] = [_stash_judge_keys(a, f"{where}.assert[{i}]", problems) for i, a in enumerate(raw["assert"])]
    return raw


def expand_vars(test: EvalCase) -> list[EvalCase]:
    """One test per combination of list-valued vars whose first item is a string."""
    if test.options.disable_var_expansion:
        return [test]
    axes = [(k, v if isinstance(v, list) and v and isinstance(v[0], str) else [v]) for k, v in test.vars.items()]
    combos = list(itertools.product(*(values for _key, values in axes)))
    if len(combos) == 1:
        return [test]
    return [test.model_copy(update={"vars": dict(zip([k for k, _ in axes], combo, strict=True))}) for combo in combos]


def _variants(entries, prompt_list: list[PromptTemplate], base: Path, problems: Problems,
              notes: list[str], any_provider: bool = False) -> list[Variant]:
    if entries is None:
        problems.add("providers", "the config names no providers")
        return []
    if isinstance(entries, (str, dict)):
        entries = [entries]
    variants = []
    for index, raw in enumerate(entries if isinstance(entries, list) else []):
        where = f"providers[{index}]"
        if isinstance(raw, str):
            raw = {"id": raw}
        elif (isinstance(raw, dict) and len(raw) == 1 and next(iter(raw)) not in ProviderEntry.model_fields
              and isinstance(next(iter(raw.values())), (dict, type(None)))):  # {id: {config…}}
            (pid, options), = raw.items()
            raw = {"id": pid, **(options or {})}
        if isinstance(raw, dict) and "config" in raw and raw["config"] is None:
            raw = {**raw, "config": {}}  # `config:` with every setting commented out: promptfoo reads none
        entry = validate(ProviderEntry, raw, where, problems)
        if entry is None:
            continue
        for name in ("delay", "env"):
            if getattr(entry, name) is not None:
                problems.unsupported(where, f"the provider key {name!r}")
        if entry.transform is not None and not isinstance(entry.transform, str):
            problems.add(f"{where}.transform", "a transform is JavaScript, or a file:// path")
        elif problem := code_checks.transform_problem(entry.transform, base):
            problems.add(f"{where}.transform", problem)
        found = providers.parse_id(entry.id, base, any_provider)
        if isinstance(found, str):
            problems.add(where, found)
            continue
        family, target = found
        allowed = [p for p in prompt_list if entry.prompts is None or any(
            p.label == name or p.label.startswith(f"{name}:") for name in entry.prompts)]
        if entry.prompts is not None and not allowed:
            problems.add(f"{where}.prompts", f"no prompt is labelled {', '.join(entry.prompts)}")
        for p in allowed:  # a prompt's own config goes over its provider's (promptfoo: {...config, ...prompt.config})
            own = p.config if not p.exec or family == "code" else {  # an exec: prompt's own settings are its command's
                k: v for k, v in p.config.items() if k in providers.CONFIG_KEYS.get(family, ())}
            config, at = {**entry.config, **own}, f"{where} (with prompt {p.label[:60]!r})" if own else where
            if family == "code":  # a custom provider: its config goes to its code as written
                fields = {"target": target, "config": config}
            else:
                fields = providers.settings(family, target, config, at, problems, notes, base)
            fields["transform"] = entry.transform if isinstance(entry.transform, str) else None
            variants.append(Variant(provider_id=entry.id, label=entry.label or entry.id, prompt=p, **fields))
    if not isinstance(entries, list):
        problems.add("providers", "must be a provider id or a list of providers")
    return variants


def _judge_moved(options: dict) -> dict:
    """defaultTest's options when a judge is named on the command line: its provider goes, the settings its
    config writes for the judge's requests (max_tokens, temperature…) stay, as {config} (the evaluation's judge
    with those settings). The command line says where the judge runs, not how the config asks it."""
    options = dict(options)
    judge = options.pop("provider", None)
    config = judge.get("config") if isinstance(judge, dict) else None
    kept = {k: v for k, v in config.items() if k in providers.JUDGE_SETTINGS} if isinstance(config, dict) else {}
    return {**options, "provider": {"config": kept}} if kept else options


def read_config(data, base: Path, source: str = "", judge_given: bool = False, any_provider: bool = False) -> Suite:
    """A Suite from a parsed config mapping; raises ConfigError listing every problem. `judge_given`: a judge
    was named on the command line, which replaces where `defaultTest.options.provider` runs (as promptfoo's
    --grader) but keeps the settings its config gives the judge's requests; a test's or an assertion's own
    provider still wins. `any_provider`: every provider will run on one model (`eval --model` / `--server`), so
    any provider id is read (providers.parse_id)."""
    problems = Problems()
    notes: list[str] = []
    data = config_refs.dereference(data, base, problems)
    config = validate(ConfigFile, data if isinstance(data, dict) else {}, "", problems)
    if not isinstance(data, dict):
        problems.add("", "the config must be a YAML mapping (prompts, providers, tests…)")
    if config is None:
        config = ConfigFile.model_construct()
        for key in ("prompts", "providers", "tests", "default_test", "description", "scenarios"):
            setattr(config, key, data.get(key) if isinstance(data, dict) else None)
    prompt_list = prompts.read_prompts(config.prompts, base, problems)
    for p in prompt_list:
        problem = templates.check(p.raw)
        if problem:
            problems.add(f"prompt {p.label[:60]!r}", problem)
    entries = config.providers if config.providers is not None else config.targets  # promptfoo: either name
    variants = _variants(entries, prompt_list, base, problems, notes, any_provider)
    default_raw = _default_test(config.default_test, base, problems)
    if judge_given and isinstance(default_raw, dict) and isinstance(default_raw.get("options"), dict):
        default_raw = {**default_raw, "options": _judge_moved(default_raw["options"])}
    default = (_test(default_raw, "defaultTest", problems, base, len(variants), notes, any_provider)
               if default_raw else None)
    cases: list[EvalCase] = []
    # promptfoo: no tests is one empty test, unless there are scenarios
    written = (case_files.raw_tests(config.tests, base, problems) if config.tests is not None
               else [] if config.scenarios else [("tests", {})])
    if config.scenarios is not None:
        written += scenarios.scenario_tests(config.scenarios, base, problems)
    for where, raw in written:
        test = _test(raw, where, problems, base, len(variants), notes, any_provider)
        if test is not None:
            cases += expand_vars(case_files.load_file_vars(merge_default(test, default), where, base, problems))
    for index, metric in enumerate(config.derived_metrics or []):
        try:
            derived_metrics.parse(metric.value)
        except derived_metrics.ExpressionError as exc:
            problems.add(f"derivedMetrics[{index}]", f"{metric.name}: cannot read {metric.value!r}: {exc}")
    filters = nunjucks_filters.read(config.nunjucks_filters, base, problems)
    simulated_user.check_talkers(cases, variants, problems)
    problems.raise_if_any(source)
    notes += _chorus_only(cases)
    paths = config.output_path if isinstance(config.output_path, list) else [config.output_path] * bool(
        config.output_path)
    options = config.evaluate_options
    return Suite(description=config.description or "", source=source, base_dir=base, prompts=prompt_list,
                 variants=variants, cases=cases, output_paths=[str(p) for p in paths],
                 max_concurrency=options.max_concurrency if options else None,
                 repeat=(options.repeat if options and options.repeat else 1), notes=notes + webhook.notes(cases),
                 code=code_checks.code_uses(cases, base, variants, filters),
                 derived_metrics=config.derived_metrics or [], nunjucks_filters=filters)


def _chorus_only(cases: list[EvalCase]) -> list[str]:
    """A note for each of Chorus's own assertion types the cases use (promptfoo would refuse the config)."""
    used = {a.base_type for case in cases for top in case.assertions for a in [top, *(top.assertions or [])]}
    return [f"{kind} is Chorus's own assertion: promptfoo does not know it" for kind in CHORUS_TYPES if kind in used]


def _default_test(value, base: Path, problems: Problems) -> dict | None:
    """`defaultTest` as written, or the mapping a `file://defaults.yaml` (or .json) holds, as promptfoo reads it."""
    if not isinstance(value, str):
        return value
    path = base / value.removeprefix("file://")
    text = case_files.read_text(path, problems) if value.startswith("file://") else None
    if text is None:
        problems.add("defaultTest", f"a defaultTest is a mapping or a file://path to one, got {value!r:.80}")
        return None
    try:
        found = yaml.safe_load(text)
    except yaml.YAMLError as exc:
        problems.add("defaultTest", f"{path}: not valid YAML: {exc}")
        return None
    if not isinstance(found, dict):
        problems.add("defaultTest", f"{path} must hold a mapping (vars, assert, options…)")
        return None
    return found


def _test(raw: dict, where: str, problems: Problems, base: Path, n_variants: int,
          notes: list[str] | None = None, any_provider: bool = False) -> EvalCase | None:
    """The test, its assertions validated one by one so one bad assertion does not hide problems in others."""
    raw = _stash_judge_keys(raw, where, problems)
    if isinstance(raw, dict) and "provider" in raw:  # the provider the test runs through (simulated_user.py)
        raw = {**raw, "provider": simulated_user.check(raw["provider"], f"{where}.provider", problems)}
    items = raw.get("assert") if isinstance(raw, dict) else None
    if isinstance(items, list):
        raw = {k: v for k, v in raw.items() if k != "assert"}
    test = validate(EvalCase, raw, where, problems)
    checked = []
    if isinstance(items, list):  # checked even when the test itself is not valid: every problem at once
        checked = [validate(Assertion, item, f"{where}.assert[{i}]", problems) for i, item in enumerate(items)]
        for i, assertion in enumerate(checked):
            if assertion is not None:
                check_assertion(assertion, f"{where}.assert[{i}]", problems, n_variants, base, any_provider)
    if test is None:
        return None
    if isinstance(items, list):
        test.assertions = [a for a in checked if a is not None]
    for name in ("transform", "transform_vars"):
        if problem := code_checks.transform_problem(getattr(test.options, name), base):
            problems.add(f"{where}.options", problem)
    _check_judge(test.options.provider, f"{where}.options.provider", problems, base, any_provider)
    if test.assert_scoring_function is not None:
        problem = code_checks.scoring_function_problem(test.assert_scoring_function, base)
        if problem:
            problems.add(f"{where}.assertScoringFunction", problem)
    if test.options.providers is not None and notes is not None:
        notes.append(f"{where}.options.providers: promptfoo reads no such option (graders are options.provider), "
                     "so it is ignored, as promptfoo ignores it")
    return test


def load_config(path, judge_given: bool = False, any_provider: bool = False) -> Suite:
    """Read promptfooconfig.yaml (or .json); raises ConfigError (every problem listed) for anything unusable.
    `judge_given`: see `read_config`."""
    path = Path(path)
    problems = Problems()
    text = case_files.read_text(path, problems)
    problems.raise_if_any()
    try:
        data = yaml.safe_load(text)
    except yaml.YAMLError as exc:
        problems.add(str(path), f"not valid YAML: {exc}")
        problems.raise_if_any()
    except RecursionError:
        problems.add(str(path), "nested too deeply to read")
        problems.raise_if_any()
    return read_config(data, path.resolve().parent, str(path), judge_given, any_provider)
