"""The benchmark's result as the table `python -m app bench` prints."""

from __future__ import annotations

import json

from app.bench import machine
from app.bench.frontier import frontier_lines


def format_table(result: dict) -> str:
    tp, ratios = result["throughput"], result["ratios"]
    lines = [f"Chorus benchmark — {result['model']}, {result['threads']} threads, median of "
             f"{result['setup']['repetitions']} interleaved run(s)", "",
             f"{'N':>4} {'engine t/s':>11} {'raw loop t/s':>13} {'engine/raw':>11}"]
    for n in tp["engine"]:
        lines.append(f"{n:>4} {tp['engine'][n]:>11.1f} {tp['raw_loop'][n]:>13.1f} {ratios['engine_vs_raw'][n]:>11.3f}")
    d = result["details"]
    lines += ["",
              f"N=4: Llama x4 in threads {tp['llama_threads']['4']:.1f} t/s, one Llama in turn "
              f"{tp['llama_sequential']['4']:.1f} t/s -> engine / best naive = {ratios['engine_vs_best_naive_4']:.2f}",
              f"TTFT of a newcomer: idle {d['ttft_idle_s'] * 1000:.0f} ms, with 7 decoding "
              f"{d['ttft_loaded_s'] * 1000:.0f} ms -> {ratios['ttft_loaded_vs_idle']:.2f}x",
              f"{result['setup']['long_prompt_tokens']}-token prompt joining 4 streams: p99 gap "
              f"{d['long_prompt_p99_gap_s'] * 1000:.0f} ms vs steady {d['steady_gap_s'] * 1000:.0f} ms -> "
              f"{ratios['itl_p99_long_prompt_vs_steady']:.2f}x; its TTFT {d['long_prompt_ttft_s']:.2f} s vs idle "
              f"{d['long_prompt_idle_ttft_s']:.2f} s -> {ratios['long_prompt_ttft_loaded_vs_idle']:.2f}x"]
    lines += frontier_lines(ratios.get("long_prompt_frontier", {}), result["setup"].get("pacing"))
    fan, setup = d["fanout"], result["setup"]
    uncached = (f" (prompt cache off: {d['fanout_uncached_ttft_vs_single']:.2f}x)"
                if d.get("fanout_uncached_ttft_vs_single") else "")
    follow, coalesced = d["followup"], d["coalesced_decode_tokens"]
    lines += [f"{setup['shared_prompt_tokens']}-token prompt: cold TTFT {fan['cold_ttft_s'] * 1000:.0f} ms, rerun "
              f"{fan['rerun_ttft_s'] * 1000:.1f} ms -> {ratios['rerun_ttft_vs_cold']:.3f}x; {setup['fanout']} seeds at "
              f"once, last TTFT {fan['fanout_last_ttft_s'] * 1000:.0f} ms -> {ratios['fanout_ttft_vs_single']:.2f}x"
              f"{uncached}",
              f"Third chat turn prefilled {follow['prefilled']} of {follow['conversation_tokens']} prompt tokens; its "
              f"new turn has {follow['new_turn_tokens']} -> {ratios['followup_prefill_vs_new_turn']:.2f}x "
              f"(reproducible mode: {d['followup_reproducible']['prefilled']} -> "
              f"{d['followup_prefill_vs_new_turn_reproducible']:.2f}x)",
              f"4 identical greedy requests decoded {coalesced['identical']} tokens, one decodes "
              f"{coalesced['one']} -> {ratios['coalesced_decode_tokens_ratio']:.2f}x",
              f"N=8 with logprobs=5: {tp['engine_logprobs_5']['8']:.1f} t/s -> "
              f"{ratios['logprobs_throughput_ratio']:.3f}x of plain; under a grammar: "
              f"{tp['engine_grammar']['8']:.1f} t/s -> {ratios['grammar_throughput_ratio']:.3f}x; under a JSON schema: "
              f"{tp['engine_json_schema']['8']:.1f} t/s -> {ratios['json_schema_throughput_ratio']:.3f}x "
              "(each over free text run beside it)",
              f"N=8 thinking, reasoning split on / off: {d['reasoning_tps']['on']:.1f} / "
              f"{d['reasoning_tps']['off']:.1f} t/s -> {ratios['reasoning_parsing_ratio']:.3f}x (interleaved)"]
    parse = d.get("tool_parse_us_per_token")
    if parse:
        lines += [f"Tool-call parser (app/engine/chat/parse), re-parsing after each token: {parse['plain']:.1f} us a "
                  f"token over {parse['plain_tokens']} tokens of text, {parse['call']:.1f} us over a "
                  f"{parse['call_tokens']}-token reply with a call"]
    repro = d["reproducible_workload_tps"]
    lines += ["Mixed prompts end to end, reproducible on / off: " + ", ".join(
        f"N={n} {repro[n]['on']:.1f} / {repro[n]['off']:.1f} t/s -> {ratios['reproducible_throughput_ratio'][n]:.3f}x"
        for n in repro)]
    two = d["two_engines_tps"]
    lines += [f"Two local models generating at once: {two['together']:.1f} t/s together vs {two['one']:.1f} t/s one "
              f"alone -> {ratios['two_engines_vs_one']:.2f}x"]
    kv, raw = d["kv_type_tps"], d["kv_type_greedy_agreement_raw_prompts"]
    lines += ["KV cache type at N=8: " + ", ".join(
        f"{t} {kv[t]:.1f} t/s ({ratios['kv_type_throughput_ratio'][t]:.3f}x of f16), greedy agreement with f16 on "
        f"chat questions {ratios['kv_type_greedy_agreement'][t]:.1%} of tokens "
        f"({d['kv_type_identical_requests'][t]:.0%} of replies identical; {raw[t]:.1%} on the raw prompts)"
        for t in ratios["kv_type_throughput_ratio"])]
    if "gui" in result:
        lines += gui_lines(result["gui"])
    lines += _pairs_line(result.get("pairs", {}))
    return "\n".join(lines)


def _pairs_line(pairs: dict) -> list[str]:
    """Which figures have too few pairs to be within ±5 % (95 %), by their own spread."""
    short = [f"{name} {f['pairs_for_5pct']}" for name, f in pairs.items()
             if f["pairs_for_5pct"] and f["pairs_for_5pct"] > len(f["pairs"])]
    if not pairs:
        return []
    return ["", "Every ratio is the median of per-repetition pairs run back to back (order alternating). Pairs needed "
            "for ±5 % (95 %), where more than this run had: " + (", ".join(short) if short else "none")]


def write_json(path: str, result: dict) -> None:
    """A benchmark's results as indented JSON at `path`, labelled with the run's date and machine ("run"), and a
    line saying so."""
    with open(path, "w", encoding="utf-8") as f:
        json.dump({"run": machine.label(), **result}, f, indent=2)
    print(f"\nwrote {path}")


def gui_lines(g: dict) -> list[str]:
    """What `bench --gui` (and `--gui-panes N`) measured of the window, in words."""
    slots = f" on {g['slots']} slots" if g.get("slots", g["panes"]) != g["panes"] else ""
    lines = [f"Window with {g['panes']} panes{slots} streaming: {g['gui_tps']:.1f} t/s vs headless "
              f"{g['headless_tps']:.1f} t/s -> {g['gui_vs_headless']:.3f}; GUI thread CPU "
              f"{g['gui_thread_cpu_share'] * 100:.1f}% of one core; event-loop lag p99 {g['lag_p99_ms']:.1f} ms "
              f"(max {g['lag_max_ms']:.1f}); stats panel update median {g['panel_update_median_ms']:.2f} ms, "
              f"p99 {g['panel_update_p99_ms']:.2f} ms; last pane shown done {g['ui_done_lag_ms']:.0f} ms after "
              f"the engine finished it"]
    if g.get("pairs_for_5pct"):
        lines.append(f"  the window's figure is the median of {len(g['samples']['pair_ratios'])} pairs "
                     f"({', '.join(f'{r:.3f}' for r in g['samples']['pair_ratios'])}); within ±5 % it needs "
                     f"{g['pairs_for_5pct']}")
    if "autosave_encode_ms" in g:
        lines.append(f"Autosave on the GUI thread (it encodes; a worker writes): {g['autosaves']:.0f} saves a run, "
                     f"{g['autosave_encode_ms']:.2f} ms each, {g['autosave_gui_share'] * 100:.2f}% of the run")
    return lines
