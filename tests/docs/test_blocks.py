"""The docs' block runner on small pages: each rule fails a page whose block does not do what
the page says, naming its line, and passes one that does; a block no rule claims is reported.
A runner that passed everything would make every page's test worthless."""

from __future__ import annotations

import os
import sys
from pathlib import Path

import pytest

from tests.docs.blocks import PageFailure, run_page
from tests.docs.claims import claim_problems
from tests.docs.sandbox import SCRIPTS

FENCE = "```"
# A background command that a reader would start: it says it is up, then runs until SIGTERM,
# on which it exits 0.
SERVER = (
    "python -c 'import signal, sys, time; "
    'signal.signal(signal.SIGTERM, lambda *_: sys.exit(0)); print("up", flush=True); '
    "time.sleep(60)'"
)


def page(tmp_path: Path, text: str) -> Path:
    path = tmp_path / "page.md"
    path.write_text(text.replace("~~~", FENCE))
    return path


def run(tmp_path: Path, text: str) -> None:
    """Run the page in a directory of its own (tmp_path/run, then run-1, ...)."""
    runs = len(list(tmp_path.glob("run*")))
    run_page(page(tmp_path, text), tmp_path, tmp_path / (f"run-{runs}" if runs else "run"))


def failure(tmp_path: Path, text: str) -> str:
    with pytest.raises(PageFailure) as failed:
        run(tmp_path, text)
    return str(failed.value)


def test_printed_output_must_match_the_output_block(tmp_path: Path) -> None:
    text = (
        "Say it:\n\n~~~sh\necho hello\necho world\n~~~\n\n<!-- docs: output -->\n~~~text\n{}\n~~~\n"
    )
    run(tmp_path, text.format("hello\nworld"))

    message = failure(tmp_path, text.format("hello\nplanet"))

    assert message.startswith("page.md:9: the output differs from line 2")
    assert "'planet' expected, 'world' printed" in message


def test_dots_match_anything_within_a_line_and_no_more(tmp_path: Path) -> None:
    text = "~~~python\nprint('job 42 queued at 12:00:07')\nprint('done')\n~~~\n\n"
    run(tmp_path, text + "<!-- docs: output -->\n~~~text\njob ... queued at ...\ndone\n~~~\n")

    message = failure(tmp_path, text + "<!-- docs: output -->\n~~~text\njob ...\n~~~\n")

    assert "page.md:7: the output differs from line 2" in message


def test_a_failing_command_fails_the_page_at_its_line(tmp_path: Path) -> None:
    text = "~~~sh\ntrue\n# a comment\nls missing-file \\\n  --all\n~~~\n"

    message = failure(tmp_path, text)

    assert message.startswith("page.md:4: `ls missing-file \\\n  --all` exited 2, not 0")
    assert "missing-file" in message.split("--- stderr:")[1]


def test_an_exit_directive_expects_that_code(tmp_path: Path) -> None:
    run(tmp_path, "<!-- docs: exit 3 -->\n~~~sh\nexit 3\n~~~\n")

    message = failure(tmp_path, "<!-- docs: exit 3 -->\n~~~sh\ntrue\n~~~\n")

    assert message.startswith("page.md:3: `true` exited 0, not 3")


def test_a_background_command_runs_until_the_page_ends(tmp_path: Path) -> None:
    marker = tmp_path / "run" / "page" / "started"
    text = f"<!-- docs: background -->\n~~~sh\n{SERVER}\n~~~\n\n~~~sh\nls started || true\n~~~\n"

    run(tmp_path, text.replace("ls started || true", "touch started"))

    assert marker.exists()


def test_a_background_command_that_dies_fails_the_page(tmp_path: Path) -> None:
    text = "Start it:\n\n<!-- docs: background -->\n~~~sh\necho starting; exit 3\n~~~\n"

    message = failure(tmp_path, text)

    assert message.startswith("page.md:5: the background command `echo starting; exit 3`")
    assert "exited 3 before the page ended" in message and "starting" in message


def test_a_background_command_must_stop_cleanly_on_sigterm(tmp_path: Path) -> None:
    failing = SERVER.replace("sys.exit(0)", "sys.exit(3)")

    message = failure(tmp_path, f"<!-- docs: background -->\n~~~sh\n{failing}\n~~~\n")

    assert message.startswith("page.md:3: `python -c")
    assert "exited 3 on SIGTERM (0 expected)" in message


def test_a_background_command_killed_by_the_sigterm_it_was_sent_stopped_cleanly(
    tmp_path: Path,
) -> None:
    """As uvicorn does after its shutdown; a supervisor counts that as a clean stop."""
    killed = "python -c 'import time; print(\"up\", flush=True); time.sleep(60)'"

    run(tmp_path, f"<!-- docs: background -->\n~~~sh\n{killed}\n~~~\n")


def test_a_restart_stops_the_running_command_of_the_same_text_first(tmp_path: Path) -> None:
    noting = SERVER.replace("import signal,", "import os, signal,").replace(
        "print(", 'open("pids", "a").write(f"{os.getpid()}\\n"); print('
    )
    started = f"<!-- docs: background -->\n~~~sh\n{noting}\n~~~\n"
    restarted = f"<!-- docs: restart -->\n~~~sh\n{noting}\n~~~\n"
    alive = (
        "<!-- invisible-code-block: python\n"
        "import os, pathlib\n"
        "first, second = map(int, pathlib.Path('pids').read_text().split())\n"
        "assert not os.path.exists(f'/proc/{first}') and os.path.exists(f'/proc/{second}')\n"
        "-->\n"
    )

    run(tmp_path, started + "\n" + restarted + "\n" + alive)

    failing = (started + "\n" + restarted).replace("sys.exit(0)", "sys.exit(3)")
    message = failure(tmp_path, failing)
    assert message.startswith("page.md:7: page.md:3: `python -c"), message
    assert "exited 3 on SIGTERM" in message


def test_a_titled_file_is_written_for_later_blocks_to_import(tmp_path: Path) -> None:
    text = (
        '~~~python title="shop/prices.py"\ndef total(items):\n    return sum(items)\n~~~\n\n'
        "~~~python\nfrom shop.prices import total\n\nassert total([1, 2]) == 3\n~~~\n\n"
        "~~~sh\npython -c 'from shop.prices import total; print(total([4, 5]))'\n~~~\n\n"
        "<!-- docs: output -->\n~~~text\n9\n~~~\n"
    )
    run(tmp_path, text)

    message = failure(tmp_path, text.replace("return sum(items)", "return sum(items"))

    assert message.startswith("page.md:1: the python block does not parse")


def test_python_blocks_share_a_namespace_and_may_await(tmp_path: Path) -> None:
    text = (
        "~~~python\nimport asyncio\n\ncount = 1\n~~~\n\n"
        "~~~python\nawait asyncio.sleep(0)\ncount += 1\n~~~\n\n"
        "~~~python\nassert count == 3, count\n~~~\n"
    )

    message = failure(tmp_path, text)

    assert message.startswith("page.md:12: the python block raised:")
    assert 'File "' + str(tmp_path / "page.md") + '", line 13' in message
    assert "AssertionError: 2" in message


def test_a_pycon_block_is_a_doctest(tmp_path: Path) -> None:
    text = "~~~pycon\n>>> 6 * 7\n42\n>>> print('a long line')\na ... line\n~~~\n"
    run(tmp_path, text)

    message = failure(tmp_path, text.replace("42", "41"))

    assert message.startswith("page.md:1:") and "Expected:\n    41\nGot:\n    42" in message


def test_data_blocks_must_parse(tmp_path: Path) -> None:
    run(tmp_path, '~~~toml\n[report]\ncron = "*/10 * * * *"\n~~~\n\n~~~json\n{"a": [1]}\n~~~\n')

    message = failure(tmp_path, "~~~yaml\nkey: [unclosed\n~~~\n")

    assert message.startswith("page.md:1: the yaml block does not parse")


def test_a_not_run_block_is_only_checked(tmp_path: Path) -> None:
    text = (
        '<!-- docs: not-run reason="needs a server" -->\n~~~sh\ncurl http://db.internal/{}\n~~~\n'
    )
    run(tmp_path, text.format("x"))

    message = failure(tmp_path, text.format("x )"))

    assert message.startswith("page.md:2: the sh block does not parse")


def test_the_page_runs_in_its_own_directory_and_environment_then_leaves_none(
    tmp_path: Path,
) -> None:
    before = (Path.cwd(), dict(os.environ), list(sys.path), set(sys.modules))
    text = (
        '~~~python title="helper_module_of_the_page.py"\nVALUE = 1\n~~~\n\n'
        "~~~python\nimport os\n\nimport helper_module_of_the_page\n\n"
        "print(os.getcwd(), os.environ['ROTA_DATABASE_URL'])\nos.environ['EXTRA'] = '1'\n~~~\n\n"
        "<!-- docs: output -->\n~~~text\n{dir} sqlite:///{dir}/rota.db\n~~~\n\n"
        "~~~sh\ncommand -v rota\n~~~\n\n<!-- docs: output -->\n~~~text\n{rota}\n~~~\n"
    )

    run(
        tmp_path,
        text.format(dir=tmp_path / "run" / "page", rota=SCRIPTS / "rota"),
    )

    assert (Path.cwd(), dict(os.environ), list(sys.path), set(sys.modules)) == before


def test_a_snippet_block_runs_the_file_it_includes(tmp_path: Path) -> None:
    (tmp_path / "examples").mkdir()
    example = tmp_path / "examples" / "sums.py"
    example.write_text("TOTAL = sum([1, 2])\n")
    text = "~~~python\n--8<--\nexamples/sums.py\n--8<--\n~~~\n\n~~~python\nassert TOTAL == 3\n~~~\n"
    run(tmp_path, text)

    example.write_text("TOTAL = sum([1, 2])\nraise ValueError(TOTAL)\n")
    message = failure(tmp_path, text)

    assert message.startswith("page.md:1: the python block raised:")
    assert f'File "{example}", line 2' in message


def test_every_block_must_be_claimed_by_a_rule(tmp_path: Path) -> None:
    text = (
        "~~~python\nx = 1\n~~~\n\n~~~ruby\nputs 1\n~~~\n\n- a list item:\n\n"
        "    ~~~\n    no language\n    ~~~\n\n<!-- docs: output -->\n~~~python\nx\n~~~\n\n"
        "<!-- docs: not-run -->\n~~~sh\nreboot\n~~~\n\n<!-- docs: background -->\n\n"
        "<!-- docs: sometimes -->\n~~~sh\ntrue\n~~~\n"
    )

    problems = claim_problems(page(tmp_path, text), tmp_path)

    assert problems == [
        "page.md:5: ```ruby is claimed by no rule",
        "page.md:11: ``` is claimed by no rule",
        "page.md:16: ```python (docs: output) is claimed by no rule",
        "page.md:28: ```sh (docs: sometimes) is claimed by no rule",
        "page.md:25: `docs: background` must stand on the line(s) right above a block",
        "page.md:27: unknown directive `docs: sometimes`",
        'page.md: a `docs: not-run` needs a reason="..."; this page does not run 1 block(s):'
        "\n  line 21: (no reason)",
    ]


def test_a_sql_block_runs_on_mariadb_in_a_database_of_the_page(tmp_path: Path) -> None:
    text = (
        "~~~sql\nCREATE TABLE t (n INT);\nINSERT INTO t VALUES (1), (2);\n~~~\n\n"
        "~~~sql\nSELECT SUM(n) FROM t;\n~~~\n\n<!-- docs: output -->\n~~~text\n3\n~~~\n"
    )
    run(tmp_path, text)

    message = failure(tmp_path, text.replace("SUM(n)", "SUM(missing)"))

    assert message.startswith("page.md:6: MariaDB refused the SQL:")
    assert "missing" in message
