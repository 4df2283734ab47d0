"""The task suite: jobs on files and commands, each checked by a shell command (`checks.py`).

The first 24 are small ones (create, edit, count, search, files, sum, command, fix); the rest
(`work_tasks.py`) are real work: config edits, renames, failing tests, counts and sums, finding,
multi-file changes and questions.
"""

from __future__ import annotations

from checks import Task, answer_has
from work_tasks import WORK_TASKS

FIRST_TASKS: list[Task] = [
    # create: a file with exact content
    Task(
        id="hello_reins",
        category="create",
        goal="Create the file hello.txt containing the text: Hello from reins",
        check='test "$(cat hello.txt)" = "Hello from reins"',
    ),
    Task(
        id="hello_world",
        category="create",
        goal="Create a file named hello.txt containing the text: hello world",
        check='test "$(cat hello.txt)" = "hello world"',
    ),
    Task(
        id="create_notes",
        category="create",
        goal="Create the file notes.md containing the line: # Notes",
        check='test "$(cat notes.md)" = "# Notes"',
    ),
    Task(
        id="create_json",
        category="create",
        goal='Create config.json containing the JSON object {"debug": true}',
        check='python3 -c \'import json; d = json.load(open("config.json")); '
        'assert list(d) == ["debug"] and d["debug"] is True\'',
    ),
    Task(
        id="create_nested",
        category="create",
        goal="Create the file logs/app.log containing the text: started",
        check='test "$(cat logs/app.log)" = "started"',
    ),
    # edit: append, replace, delete a line
    Task(
        id="append_line",
        category="edit",
        goal="Append the line 'walk the dog' to todo.txt",
        setup={"todo.txt": "buy milk\n"},
        check='test "$(head -n1 todo.txt)" = "buy milk" '
        '&& test "$(tail -n1 todo.txt)" = "walk the dog"',
    ),
    Task(
        id="replace_word",
        category="edit",
        goal="In greeting.txt, replace the word Bob with Alice",
        setup={"greeting.txt": "Hello Bob\n"},
        check='test "$(cat greeting.txt)" = "Hello Alice"',
    ),
    Task(
        id="bump_version",
        category="edit",
        goal="Change the version in setup.cfg from 1.0 to 2.0",
        setup={"setup.cfg": "[metadata]\nname = demo\nversion = 1.0\n"},
        check="grep -qx 'version = 2.0' setup.cfg && grep -qx 'name = demo' setup.cfg",
    ),
    Task(
        id="delete_line",
        category="edit",
        goal="Remove the line 'remove me' from list.txt",
        setup={"list.txt": "apples\nremove me\npears\n"},
        check='test "$(cat list.txt)" = "$(printf \'apples\\npears\')"',
    ),
    # count: answer with a number
    Task(
        id="count_lines",
        category="count",
        goal="How many lines are in fruits.txt? Answer with the number.",
        setup={"fruits.txt": "apple\nbanana\ncherry\ndate\nelderberry\n"},
        check=answer_has("5"),
    ),
    Task(
        id="count_words",
        category="count",
        goal="How many words are in sentence.txt? Answer with the number.",
        setup={"sentence.txt": "the quick brown fox jumps over dogs\n"},
        check=answer_has("7"),
    ),
    Task(
        id="count_files",
        category="count",
        goal="How many .csv files are in the data folder? Answer with the number.",
        setup={"data/a.csv": "1\n", "data/b.csv": "2\n", "data/c.csv": "3\n", "data/d.txt": "x\n"},
        check=answer_has("3"),
    ),
    # search: report the file or the value
    Task(
        id="search_token",
        category="search",
        goal="Which file contains the text SECRET_TOKEN? Answer with the file name.",
        setup={
            "alpha.txt": "nothing here\n",
            "beta.txt": "key = SECRET_TOKEN\n",
            "gamma.txt": "still nothing\n",
        },
        check='printf "%s" "$ANSWER" | grep -q beta.txt',
    ),
    Task(
        id="search_def",
        category="search",
        goal="Which file defines the function parse_date? Answer with its path.",
        setup={
            "src/main.py": "from utils import parse_date\n\nprint(parse_date('2024-01-01'))\n",
            "src/utils.py": "def parse_date(text):\n    return text.split('-')\n",
            "src/README.md": "A demo.\n",
        },
        check='printf "%s" "$ANSWER" | grep -q utils.py',
    ),
    Task(
        id="read_port",
        category="search",
        goal="What port is set in server.ini? Answer with the number.",
        setup={"server.ini": "[server]\nhost = localhost\nport = 8080\n"},
        check=answer_has("8080"),
    ),
    # files: rename, copy, delete, make a folder
    Task(
        id="rename_file",
        category="files",
        goal="Rename draft.txt to final.txt",
        setup={"draft.txt": "draft content\n"},
        check='test "$(cat final.txt)" = "draft content" && ! test -e draft.txt',
    ),
    Task(
        id="copy_file",
        category="files",
        goal="Copy a.txt to b.txt",
        setup={"a.txt": "some text\n"},
        check="cmp -s a.txt b.txt",
    ),
    Task(
        id="delete_file",
        category="files",
        goal="Delete the file old.log",
        setup={"old.log": "old\n", "keep.log": "keep\n"},
        check="! test -e old.log && test -e keep.log",
    ),
    Task(
        id="make_dir",
        category="files",
        goal="Create a directory named build",
        check="test -d build",
    ),
    # sum: numbers in a file
    Task(
        id="sum_answer",
        category="sum",
        goal="What is the sum of the numbers in numbers.txt? Answer with the number.",
        setup={"numbers.txt": "10\n20\n12\n"},
        check=answer_has("42"),
    ),
    Task(
        id="sum_to_file",
        category="sum",
        goal="Add up the numbers in values.txt and write the total to total.txt",
        setup={"values.txt": "5\n7\n9\n"},
        check="test \"$(tr -d ' \\n' < total.txt)\" = 21",
    ),
    # commands and code
    Task(
        id="command_output",
        category="command",
        goal="Run the command: python3 -c 'print(17 * 3)' and tell me what it prints.",
        check=answer_has("51"),
    ),
    Task(
        id="fix_test",
        category="fix",
        goal="python3 test_calc.py fails. Fix the bug in calc.py so that the test passes.",
        setup={
            "calc.py": "def add(a, b):\n    return a - b\n",
            "test_calc.py": "from calc import add\n\nassert add(2, 3) == 5\nprint('ok')\n",
        },
        check="python3 test_calc.py && grep -q 'add(2, 3) == 5' test_calc.py",
    ),
    Task(
        id="fix_syntax",
        category="fix",
        goal="greet.py has a syntax error. Fix it so that python3 greet.py prints hi",
        setup={"greet.py": "def greet()\n    print('hi')\n\ngreet()\n"},
        check='test "$(python3 greet.py)" = hi',
    ),
]

TASKS: list[Task] = [*FIRST_TASKS, *WORK_TASKS]
