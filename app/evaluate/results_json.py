"""results.json in promptfoo's v3 layout (src/types/index.ts, src/util/output.ts), for the fields Chorus has.

`{evalId, results: {version: 3, timestamp, prompts[], results[], stats}, config, shareableUrl, metadata}`.
`prompts[i]` is column i (a prompt on a provider) with its metrics; `results[]` has one entry per cell with
`promptIdx` (column), `testIdx` (case, then repeats after all cases), `vars`, `prompt{raw, label}`,
`provider{id, label}`, `response{output, tokenUsage, cached, finishReason}`, `success`, `score`, `latencyMs`,
`gradingResult{pass, score, reason, namedScores, componentResults}`, `namedScores`, `failureReason` (0 none,
1 assert, 2 error), `error`. Cost is always 0: Chorus's backends report none. Chorus adds the judges'
calibration, `metadata.judgeCalibration` (each judge × rubric format: its score and whether its verdicts count),
and `metadata.exitCodeExplanation`; `unreliableVerdict` on each result is true when its verdict rests on an
unreliable judge (`success` is still what the judge said, but `stats`, and each prompt's `metrics`, count it as
`unreliable`, neither a success nor a failure).
"""

from __future__ import annotations

import json
import uuid
from datetime import datetime, timezone

from app.evaluate import cost, derived_metrics, stats
from app.evaluate.calibration import RELIABLE_AT, Reliability, describe, reliable
from app.evaluate.checks import normalise_finish_reason
from app.session.evaluation import CellResult, Evaluation


def _usage(prompt: int, completion: int, cached: int, requests: int) -> dict:
    return {"total": prompt + completion, "prompt": prompt, "completion": completion, "cached": cached,
            "numRequests": requests}


def _grading(cell: CellResult) -> dict | None:
    return cell.grading.model_dump(mode="json", by_alias=True) if cell.grading else None


def cell_record(evaluation: Evaluation, cell: CellResult, reliability: Reliability | None = None) -> dict:
    reliability = reliability or Reliability(evaluation)
    variant, case = evaluation.variants[cell.variant], evaluation.cases[cell.case]
    generated = cell.latency_ms is not None
    return {
        "id": f"{cell.case}-{cell.variant}-{cell.repeat}",
        "promptIdx": cell.variant,
        "testIdx": cell.repeat * len(evaluation.cases) + cell.case,
        "testCase": case.model_dump(mode="json", by_alias=True, exclude_defaults=True),
        "promptId": f"prompt-{cell.variant}",
        "provider": {"id": variant.provider_id, "label": variant.label},
        "prompt": {"raw": cell.prompt, "label": variant.prompt.label},
        "vars": case.vars,
        "response": {"output": cell.output,
                     "tokenUsage": _usage(cell.prompt_tokens, cell.generated_tokens, cell.cached_tokens,
                                          int(generated)),
                     "cached": cell.cached, "finishReason": normalise_finish_reason(cell.finish_reason),
                     **({"toolCalls": list(cell.result.tool_calls)} if cell.result.tool_calls else {}),
                     **({"toolResults": list(cell.tool_results)} if cell.tool_results else {})},
        "error": cell.error,
        "failureReason": cell.failure_reason,
        "success": cell.status == "pass",
        "unreliableVerdict": reliability.unreliable(cell),
        "score": cell.score,
        "latencyMs": round(cell.latency_ms) if generated else 0,
        "gradingResult": _grading(cell),
        "namedScores": cell.grading.named_scores if cell.grading else {},
        "cost": cost.of_cell(variant, case, cell) or 0,
        "metadata": {"chorus": {"status": cell.status, "repeat": cell.repeat, "ttft_s": cell.ttft_s,
                                "decode_tps": cell.decode_tps, "cached_tokens": cell.cached_tokens}},
    }


def calibration_record(calibration) -> dict:
    return {"judge": calibration.judge, "format": calibration.format, "model": calibration.name,
            "correct": calibration.correct, "total": calibration.total, "done": calibration.done,
            "reliable": reliable(calibration), "reliableAt": RELIABLE_AT, "misses": calibration.misses,
            "summary": describe(calibration)}


def _prompt_entry(evaluation: Evaluation, index: int, reliability: Reliability) -> dict:
    variant = evaluation.variants[index]
    cells = [c for c in evaluation.cells if c.variant == index and c.finished]
    counted = stats.column_stats(cells, reliability)  # as the summary counts: an unreliable judge's verdict apart
    named: dict[str, float] = {}
    counts: dict[str, int] = {}
    for cell in cells:
        for name, value in (cell.grading.named_scores if cell.grading else {}).items():
            named[name] = named.get(name, 0.0) + value
            counts[name] = counts.get(name, 0) + 1
    named = derived_metrics.apply(evaluation.derived_metrics, named)
    asserts = [r for c in cells if c.grading for r in c.grading.component_results]
    return {
        "raw": variant.prompt.raw, "label": variant.prompt.label, "id": f"prompt-{index}",
        "provider": variant.label,
        "metrics": {
            "score": sum(c.score for c in cells),
            "testPassCount": counted.passed, "testFailCount": counted.failed, "testErrorCount": counted.errors,
            "testUnreliableCount": counted.unreliable,
            "assertPassCount": sum(r.passed for r in asserts),
            "assertFailCount": sum(not r.passed for r in asserts),
            "totalLatencyMs": round(sum(c.latency_ms or 0 for c in cells)),
            "tokenUsage": _usage(sum(c.prompt_tokens for c in cells), sum(c.generated_tokens for c in cells),
                                 sum(c.cached_tokens for c in cells), sum(c.latency_ms is not None for c in cells)),
            "namedScores": named, "namedScoresCount": counts,
            "cost": sum(cost.of_cell(variant, evaluation.cases[c.case], c) or 0 for c in cells),
        },
    }


def results_document(evaluation: Evaluation) -> dict:
    now = datetime.now(timezone.utc).isoformat(timespec="milliseconds").replace("+00:00", "Z")
    total, reliability = stats.totals(evaluation), Reliability(evaluation)
    cells = [c for c in evaluation.cells if c.finished]
    prompt = sum(c.prompt_tokens for c in cells)
    completion = sum(c.generated_tokens for c in cells)
    return {
        "evalId": f"eval-{uuid.uuid4().hex[:3]}-{now[:19]}",
        "results": {
            "version": 3,
            "timestamp": evaluation.started_at or now,
            "prompts": [_prompt_entry(evaluation, i, reliability) for i in range(len(evaluation.variants))],
            "results": [cell_record(evaluation, c, reliability) for c in cells],
            "stats": {"successes": total.successes, "failures": total.failures, "errors": total.errors,
                      "unreliable": total.unreliable,
                      "tokenUsage": _usage(prompt, completion, sum(c.cached_tokens for c in cells),
                                           sum(c.latency_ms is not None for c in cells)),
                      "durationMs": round((evaluation.duration_s or 0) * 1000)},
        },
        "config": {"description": evaluation.description,
                   "prompts": list(dict.fromkeys(v.prompt.raw for v in evaluation.variants)),
                   "providers": [{"id": v.provider_id, "label": v.label} for v in evaluation.variants],
                   "tests": [c.model_dump(mode="json", by_alias=True, exclude_defaults=True)
                             for c in evaluation.cases]},
        "shareableUrl": None,
        "metadata": {"producer": "chorus", "source": evaluation.source, "judge": evaluation.judge,
                     "judgeCalibration": [calibration_record(c) for c in evaluation.calibrations],
                     "exitCodeExplanation": stats.exit_explanation(evaluation)},
    }


def to_json(evaluation: Evaluation) -> str:
    return json.dumps(results_document(evaluation), ensure_ascii=False, indent=2)


def to_jsonl(evaluation: Evaluation) -> str:
    """One line per finished cell; with earlier runs kept, each line also says what the previous run's verdict
    for the same variant and case was (`previousRun`) and whether it flipped (`flipped`: "pass → fail"…)."""
    reliability = Reliability(evaluation)
    before = _previous_verdicts(evaluation)
    lines = []
    for c in evaluation.cells:
        if not c.finished:
            continue
        record = cell_record(evaluation, c, reliability)
        if before:
            was = before.get((evaluation.variants[c.variant].title, _case_key(evaluation.cases[c.case]), c.repeat))
            record["previousRun"] = was
            passed = c.status == "pass"
            if was is not None and (was == "pass") != passed:
                record["flipped"] = "fail → pass" if passed else "pass → fail"
        lines.append(json.dumps(record, ensure_ascii=False) + "\n")
    return "".join(lines)


def _case_key(case) -> str:
    return json.dumps([case.vars, case.description or None], sort_keys=True, default=str)


def _previous_verdicts(evaluation: Evaluation) -> dict:
    """(variant title, case key, repeat) -> the verdict of the run before this one (none kept: empty)."""
    if not evaluation.runs:
        return {}
    run = evaluation.runs[-1]
    return {(run.variant_title(c.variant), run.case_key(c.case), c.repeat): c.status for c in run.cells
            if c.status in ("pass", "fail", "error")}
