"""is-sql and contains-sql: promptfoo's rules and messages (src/assertions/sql.ts, node-sql-parser's
whiteListCheck), on sqlglot."""

import pytest
import yaml

from app.evaluate import load_config
from app.evaluate.checks import CheckError, Output, run_check
from app.session.evaluation import Assertion


def check(kind: str, text: str, value=None):
    return run_check(Assertion(type=kind, value=value), value, Output(text=text))


def test_a_statement_passes_and_prose_does_not_conform():
    assert check("is-sql", "SELECT id, name FROM users").reason == "Assertion passed"
    result = check("is-sql", "The number of bananas sold")
    assert not result.passed and result.score == 0
    assert result.reason == "SQL statement does not conform to the provided MySQL database syntax."
    result = check("not-is-sql", "SELECT id FROM users")
    assert not result.passed and result.reason == "The output SQL statement is valid"
    assert check("not-is-sql", "no sql here").passed


def test_allowed_tables_and_columns_are_node_sql_parser_authorities():
    sql = "SELECT SUM(s.quantity) FROM Shipments s JOIN Products p ON s.product_id = p.product_id"
    allowed = {"databaseType": "MySQL", "allowedTables": ["select::null::Products", "select::null::Shipments"]}
    assert check("is-sql", sql, allowed).passed
    result = check("is-sql", sql.replace("Products", "Orders"), allowed)
    assert result.reason == ("SQL validation failed: authority = 'select::null::Orders' is required in table "
                             f"whiteList to execute SQL = '{sql.replace('Products', 'Orders')}'.")
    update = "UPDATE a SET id = 1 WHERE name IN (SELECT name FROM b)"  # node-sql-parser's own README examples
    assert check("is-sql", update, {"allowedColumns": ["select::null::name", "update::a::id"]}).passed
    assert check("is-sql", update, {"allowedTables": ["(select|update)::(.*)::(a|b)"]}).passed
    assert check("is-sql", "SELECT t.id FROM t", {"allowedColumns": ["select::t::id"]}).passed
    result = check("is-sql", "SELECT name FROM t", {"allowedColumns": ["select::null::DoesntExist"]})
    assert "authority = 'select::null::name' is required in column whiteList" in result.reason


def test_dialect_value_and_contains_sql():
    assert check("is-sql", "SELECT TOP 3 id FROM t", {"databaseType": "TransactSQL"}).passed
    assert not check("is-sql", "SELECT 1", {"databaseType": "Nonesuch"}).passed
    with pytest.raises(CheckError, match="must have a object value"):
        check("is-sql", "SELECT 1", "MySQL")
    assert check("contains-sql", "Here it is:\n```sql\nSELECT id FROM users\n```\nEnjoy.").passed
    assert not check("contains-sql", "Here it is: no code at all").passed


def test_a_config_with_is_sql_is_accepted(tmp_path):
    (tmp_path / "promptfooconfig.yaml").write_text(yaml.safe_dump({
        "prompts": ["Count {{x}}"], "providers": ["echo"],
        "tests": [{"vars": {"x": "a"}, "assert": [{"type": "is-sql", "value": {"allowedTables": ["select::null::t"]}},
                                                   {"type": "contains-sql"}]}]}), encoding="utf-8")
    case, = load_config(tmp_path / "promptfooconfig.yaml").cases
    assert [a.type for a in case.assertions] == ["is-sql", "contains-sql"]
