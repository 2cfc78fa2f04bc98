"""A bad grammar's message is the parser's own, and checking one never touches what other threads write to stderr.

llama.cpp's GBNF parser prints its reason with fprintf(stderr); Chorus used to redirect the whole process's fd 2
around the call, which swallowed other threads' stderr meanwhile (and put it in the message). `capfd` holds fd 2
for the whole test: every line the writer thread wrote must be there, and none in any message.
"""

import os
import threading

from app.engine.chat.grammar.probe import reason
from tests.conftest import ask

BROKEN = 'root ::= "yes" | ('
UNDERSCORE = 'root ::= my_rule\nmy_rule ::= "a"'  # llguidance's GBNF parser takes it, llama.cpp's does not


def test_checking_grammars_leaves_other_threads_stderr_alone(make_engine, capfd):
    engine = make_engine(n_slots=1, n_ctx_per_slot=256)
    stop, written = threading.Event(), []

    def writer() -> None:
        for i in range(20_000):  # bounded: a few seconds at most
            if stop.is_set():
                return
            line = f"other-thread-line-{i}\n"
            os.write(2, line.encode())
            written.append(line)

    thread = threading.Thread(target=writer)
    thread.start()
    try:
        messages = [engine.check_grammar(BROKEN) for _ in range(200)]
    finally:
        stop.set()
        thread.join()
    err = capfd.readouterr().err
    assert written and all(line in err for line in written)  # nothing swallowed
    assert all(m == messages[0] for m in messages) and "other-thread" not in messages[0]  # nothing leaked in


def test_a_broken_grammar_gets_the_parsers_reason(make_engine):
    engine = make_engine(n_slots=2, n_ctx_per_slot=256)
    message = engine.check_grammar(BROKEN)
    assert message.startswith("invalid grammar: ") and "Expected ')'" in message and "line 1" in message
    failed = engine.submit(ask("Answer.", max_tokens=4, grammar=BROKEN)).result(timeout=120)
    assert failed.finish_reason == "error" and failed.error_kind == "grammar" and failed.error == message


def test_where_the_parsers_disagree_llama_cpps_own_words_come_from_a_process_of_its_own(make_engine):
    engine = make_engine(n_slots=1, n_ctx_per_slot=256)
    message = engine.check_grammar(UNDERSCORE)
    assert message == 'invalid grammar: expecting newline or end at _rule my_rule ::= "a"'


def test_other_grammar_failures_come_through_the_log_callback(make_engine):
    engine = make_engine(n_slots=1, n_ctx_per_slot=256)
    assert "does not contain a 'root' symbol" in engine.check_grammar('answer ::= "a"')
    assert "left recursion" in engine.check_grammar('root ::= root "a" | "b"')
    assert engine.check_grammar('root ::= "a" | "b"') is None


def test_the_probe_keeps_the_parsers_sentence_without_the_grammar_it_echoes():
    printed = 'parse: error parsing grammar: expecting \')\' at \n\nroot ::= "yes" | (\n'
    assert reason(printed, 'root ::= "yes" | (') == "expecting ')' at"
    assert reason("", "root ::= x") == ""
