"""`is-sql` and `contains-sql` with promptfoo's rules and messages (src/assertions/sql.ts), on sqlglot.

promptfoo parses the output with node-sql-parser in the dialect `databaseType` (default MySQL), then checks every
table and column the statement touches against `allowedTables` / `allowedColumns`: each written as node-sql-parser's
authority `{statement}::{db or table or null}::{name}`, matched as an anchored, case-insensitive regular expression
(`select::null::Products`, `(select|update)::(.*)::orders`). Chorus parses with sqlglot in the same dialect and
names tables and columns the same way: a table's db is its written schema (else null), its statement the one it is
in; a column is `select` wherever it is read, `update` as an UPDATE's SET target and `insert` in an INSERT's column
list, and its table is the one its qualifier names (an alias resolved), else null (the updated or inserted table
for those two).
Output that parses to no statement (prose, a bare expression) does not conform, as in node-sql-parser.
`contains-sql` checks the first ``` block when there is one (promptfoo's handleContainsSql), else the whole output.
"""

from __future__ import annotations

import re

import sqlglot
from sqlglot import exp

from app.evaluate.check_types import CheckError, Output, verdict
from app.session.evaluation import Assertion, GradingResult

TYPES = ("is-sql", "contains-sql")
# node-sql-parser's database names (lower-cased) -> sqlglot's dialects; "" is sqlglot's own, generic SQL
DIALECTS = {"mysql": "mysql", "mariadb": "mysql", "postgresql": "postgres", "bigquery": "bigquery", "db2": "",
            "hive": "hive", "flinksql": "", "sqlite": "sqlite", "transactsql": "tsql", "snowflake": "snowflake",
            "redshift": "redshift", "athena": "athena", "trino": "trino", "noql": ""}
_STATEMENTS = (exp.Query, exp.DML, exp.DDL, exp.Drop, exp.Alter, exp.Use, exp.Set, exp.Show, exp.Describe,
               exp.Transaction, exp.Commit, exp.Rollback, exp.TruncateTable, exp.Grant, exp.Analyze)
_KIND = {exp.Select: "select", exp.Insert: "insert", exp.Update: "update", exp.Delete: "delete",
         exp.Create: "create", exp.Drop: "drop", exp.Alter: "alter", exp.TruncateTable: "truncate",
         exp.Merge: "merge"}


def _parse(sql: str, database: str) -> list[exp.Expr]:
    """The statements, or ValueError when the text is not SQL of that dialect."""
    dialect = DIALECTS.get(database.lower())
    if dialect is None:
        raise ValueError(f"{database} is not supported currently")
    try:
        statements = sqlglot.parse(sql, read=dialect or None, error_level=sqlglot.ErrorLevel.RAISE)
    except (sqlglot.errors.SqlglotError, RecursionError) as exc:
        raise ValueError(str(exc)) from None
    found = [s for s in statements if s is not None]
    if not found or not all(isinstance(s, _STATEMENTS) for s in found):
        raise ValueError("not a SQL statement")
    return found


def _kind(node: exp.Expr) -> str:
    """The statement a table or column belongs to: its nearest enclosing one (a subquery's SELECT in an UPDATE)."""
    parent = node.parent
    while parent is not None:
        for cls, kind in _KIND.items():
            if isinstance(parent, cls):
                return kind
        parent = parent.parent
    return "select"


def _authorities(statements: list[exp.Expr], what: str) -> list[str]:
    found: list[str] = []
    for statement in statements:
        ctes = {cte.alias_or_name.lower() for cte in statement.find_all(exp.CTE)}
        tables = [t for t in statement.find_all(exp.Table) if t.name and t.name.lower() not in ctes]
        if what == "table":
            items = [f"{_kind(t)}::{t.db or 'null'}::{t.name}" for t in tables]
        else:
            aliases = {t.alias_or_name.lower(): t.name for t in tables}
            items = []
            for column in statement.find_all(exp.Column, exp.Star):
                if isinstance(column, exp.Star) and isinstance(column.parent, exp.Column):
                    continue  # t.* is the column node itself
                name = "(.*)" if isinstance(column, exp.Star) or isinstance(column.this, exp.Star) else column.name
                table = aliases.get(column.table.lower(), column.table) if isinstance(column, exp.Column) and \
                    column.table else None
                kind, update = "select", column.find_ancestor(exp.Update)  # a column read anywhere is select's
                if update is not None and any(eq.this is column for eq in update.expressions):
                    kind, table = "update", table or update.this.name  # UPDATE a SET id = 1: update::a::id
                items.append(f"{kind}::{table or 'null'}::{name}")
            for insert in statement.find_all(exp.Insert):  # INSERT INTO a (id): insert::a::id
                if isinstance(insert.this, exp.Schema):
                    items += [f"insert::{insert.this.this.name}::{c.name}" for c in insert.this.expressions]
        found += [item for item in items if item not in found]
    return found


def _white_list(sql: str, statements: list[exp.Expr], allowed: list, what: str) -> str | None:
    """node-sql-parser's whiteListCheck: the first authority no allowed pattern matches, as its error says."""
    patterns = []
    for item in allowed:
        try:
            patterns.append(re.compile(f"^{item}$", re.IGNORECASE))
        except re.error as exc:
            raise CheckError(f"is-sql: allowed {what} {item!r} is not a valid pattern: {exc}") from None
    for authority in _authorities(statements, what):
        if not any(p.match(authority) for p in patterns):
            return f"authority = '{authority}' is required in {what} whiteList to execute SQL = '{sql}'"
    return None


def is_sql(sql: str, value, inverse: bool, assertion: Assertion) -> GradingResult:
    database, tables, columns = "MySQL", None, None
    if value and isinstance(value, dict):
        database = value.get("databaseType") or "MySQL"
        tables, columns = value.get("allowedTables"), value.get("allowedColumns")
    if value and not isinstance(value, dict):
        raise CheckError("is-sql assertion must have a object value.")
    for name, items in (("allowedTables", tables), ("allowedColumns", columns)):
        if items is not None and not (isinstance(items, list) and all(isinstance(i, str) for i in items)):
            raise CheckError(f"is-sql: {name} is a list of authorities such as 'select::null::orders'")
    reasons: list[str] = []
    try:
        statements = _parse(sql, str(database))
        passed = not inverse
    except ValueError:
        statements, passed = [], inverse
        reasons.append(f"SQL statement does not conform to the provided {database} database syntax.")
    for what, allowed in (("table", tables), ("column", columns)):
        if allowed:  # node-sql-parser returns at once for an empty list
            denied = _white_list(sql, statements, allowed, what) if statements else (
                f"cannot list the {what}s of SQL = '{sql}'")
            if denied:
                passed = inverse
                reasons.append(f"SQL validation failed: {denied}.")
    if inverse and not passed and not reasons:
        reasons.append("The output SQL statement is valid")
    return verdict(passed, " ".join(reasons), assertion)


def check(a: Assertion, value, out: Output, inverse: bool) -> GradingResult:
    sql = out.text
    if a.base_type == "contains-sql":
        block = re.search(r"```(?:sql)?([^`]+)```", sql)
        sql = block.group(1).strip() if block else sql
    return is_sql(sql, value, inverse, a)
