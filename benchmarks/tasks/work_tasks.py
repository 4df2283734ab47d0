"""The tasks of real work: edits of JSON, TOML and YAML files that keep the other keys, renames
across files, failing tests to fix, counts and sums over files too long to count by eye, finding
where something is, changes over several files, and questions answered without changing a file.
"""

from __future__ import annotations

from decimal import Decimal

from checks import (
    Task,
    answer_mentions,
    answer_number,
    changed,
    data_equals,
    header_added,
    output_is,
    pytest_passes,
    text_equals,
    unchanged,
    untouched,
    word_count,
)

# config: change one thing in a data file, keep every other key ------------------------------

PACKAGE_JSON = """\
{
  "name": "web-app",
  "version": "1.2.9",
  "private": true,
  "scripts": {
    "start": "node server.js",
    "test": "jest --coverage"
  },
  "dependencies": {
    "express": "^4.18.2",
    "pg": "^8.11.0"
  },
  "devDependencies": {
    "jest": "^29.7.0"
  }
}
"""

CONFIG_JSON = """\
{
  "log_level": "info",
  "http": {
    "base_url": "https://api.example.com",
    "timeout": 10
  },
  "features": ["search", "export"],
  "cache": {"enabled": true, "ttl": 300}
}
"""

INVOICER_TOML = """\
[build-system]
requires = ["hatchling"]
build-backend = "hatchling.build"

[project]
name = "invoicer"
version = "0.5.2"
description = "Make invoices from CSV files"
requires-python = ">=3.9"
dependencies = [
    "click>=8.1",
    "jinja2>=3.1",
]

[project.scripts]
invoicer = "invoicer.cli:main"

[tool.ruff]
line-length = 100
"""

FETCHER_TOML = """\
[project]
name = "fetcher"
version = "1.0.0"
requires-python = ">=3.10"
dependencies = [
    "pydantic>=2.5",
    "rich>=13",
]

[project.optional-dependencies]
dev = ["pytest>=8", "ruff"]

[tool.pytest.ini_options]
addopts = "-q"
"""

COMPOSE_YAML = """\
services:
  web:
    build: .
    ports:
      - "8000:8000"
    environment:
      DATABASE_URL: postgres://app:app@db:5432/app
      SECRET_KEY: change-me
    depends_on:
      - db
  worker:
    build: .
    command: python -m app.worker
    environment:
      DATABASE_URL: postgres://app:app@db:5432/app
  db:
    image: postgres:16
    environment:
      POSTGRES_USER: app
      POSTGRES_PASSWORD: app
    volumes:
      - pgdata:/var/lib/postgresql/data
volumes:
  pgdata: {}
"""

PRE_COMMIT_YAML = """\
repos:
  - repo: https://github.com/pre-commit/pre-commit-hooks
    rev: v4.6.0
    hooks:
      - id: trailing-whitespace
      - id: end-of-file-fixer
  - repo: https://github.com/astral-sh/ruff-pre-commit
    rev: v0.4.4
    hooks:
      - id: ruff
        args: [--fix]
      - id: ruff-format
"""

CONFIG_TASKS = [
    Task(
        id="json_version",
        category="config",
        goal="Set the version in package.json to 1.3.0",
        setup={"package.json": PACKAGE_JSON},
        check=data_equals("package.json", changed(PACKAGE_JSON, "json", {"version": "1.3.0"})),
    ),
    Task(
        id="json_add_key",
        category="config",
        goal='Add a setting "retries": 3 to the "http" section of config.json',
        setup={"config.json": CONFIG_JSON},
        check=data_equals("config.json", changed(CONFIG_JSON, "json", {"http.retries": 3})),
    ),
    Task(
        id="toml_requires",
        category="config",
        goal="Change requires-python in pyproject.toml to >=3.11",
        setup={"pyproject.toml": INVOICER_TOML},
        check=data_equals(
            "pyproject.toml",
            changed(INVOICER_TOML, "toml", {"project.requires-python": ">=3.11"}),
        ),
    ),
    Task(
        id="toml_add_dependency",
        category="config",
        goal="Add httpx>=0.27 to the project's dependencies in pyproject.toml",
        setup={"pyproject.toml": FETCHER_TOML},
        check=data_equals(
            "pyproject.toml",
            changed(
                FETCHER_TOML,
                "toml",
                {"project.dependencies": ["pydantic>=2.5", "rich>=13", "httpx>=0.27"]},
            ),
            unordered=("project.dependencies",),
        ),
    ),
    Task(
        id="yaml_port",
        category="config",
        goal="In docker-compose.yml, publish the web service on host port 8080 instead of 8000 "
        "(the container still listens on 8000).",
        setup={"docker-compose.yml": COMPOSE_YAML},
        check=data_equals(
            "docker-compose.yml",
            changed(COMPOSE_YAML, "yaml", {"services.web.ports": ["8080:8000"]}),
        ),
    ),
    Task(
        id="yaml_hook_rev",
        category="config",
        goal="Update the ruff hook in .pre-commit-config.yaml to rev v0.6.9",
        setup={".pre-commit-config.yaml": PRE_COMMIT_YAML},
        check=data_equals(
            ".pre-commit-config.yaml",
            changed(PRE_COMMIT_YAML, "yaml", {"repos.1.rev": "v0.6.9"}),
        ),
    ),
]

# rename: a definition and every use of it, across files ---------------------------------------

USERS_PY = """\
USERS = {1: "ada", 2: "grace"}


def get_user(user_id):
    return USERS.get(user_id)


def get_user_name(user_id):
    user = get_user(user_id)
    return user.title() if user else "unknown"
"""

API_PY = """\
from app.users import get_user


def user_json(user_id):
    user = get_user(user_id)
    return {"id": user_id, "name": user}


def user_exists(user_id):
    return get_user(user_id) is not None
"""

USERS_MAIN_PY = """\
from app import users
from app.api import user_exists, user_json

print(user_json(1))
print(users.get_user(2), users.get_user_name(2), user_exists(3))
"""

RETRY_SETTINGS_PY = """\
MAX_RETRIES = 5
TIMEOUT = 10
"""

RETRY_CLIENT_PY = """\
from settings import MAX_RETRIES, TIMEOUT


def fetch(url, attempt=0):
    if attempt >= MAX_RETRIES:
        raise RuntimeError(f"gave up on {url} after {MAX_RETRIES} tries")
    return f"GET {url} (timeout {TIMEOUT})"
"""

RETRY_WORKER_PY = """\
import settings
from client import fetch

print("retries:", settings.MAX_RETRIES)
print(fetch("https://example.com"))
"""

LOADER_PY = """\
class DataLoader:
    def __init__(self, rows):
        self.rows = list(rows)

    def batches(self, size):
        return [self.rows[i : i + size] for i in range(0, len(self.rows), size)]
"""

TRAIN_PY = """\
from loader import DataLoader


def train(rows):
    loader = DataLoader(rows)
    return len(loader.batches(2))
"""

TEST_LOADER_PY = """\
from loader import DataLoader
from train import train


def test_batches():
    assert DataLoader([1, 2, 3]).batches(2) == [[1, 2], [3]]


def test_train():
    assert train(range(5)) == 3
"""

RENAME_TASKS = [
    Task(
        id="rename_function",
        category="rename",
        goal="Rename the function get_user to fetch_user, in its definition and everywhere it "
        "is called.",
        setup={
            "app/__init__.py": "",
            "app/users.py": USERS_PY,
            "app/api.py": API_PY,
            "main.py": USERS_MAIN_PY,
        },
        check=" && ".join(
            [
                word_count("get_user", 0),
                word_count("fetch_user", 6),  # users.py 2, api.py 3, main.py 1
                "{ grep -q '^def get_user_name(user_id):' app/users.py "
                "|| { echo 'get_user_name is gone'; false; }; }",
                output_is("python3 main.py", "{'id': 1, 'name': 'ada'}\ngrace Grace False"),
            ]
        ),
    ),
    Task(
        id="rename_constant",
        category="rename",
        goal="Rename the constant MAX_RETRIES to RETRY_LIMIT everywhere in the code.",
        setup={
            "settings.py": RETRY_SETTINGS_PY,
            "client.py": RETRY_CLIENT_PY,
            "worker.py": RETRY_WORKER_PY,
        },
        check=" && ".join(
            [
                word_count("MAX_RETRIES", 0),
                word_count("RETRY_LIMIT", 5),
                output_is("python3 worker.py", "retries: 5\nGET https://example.com (timeout 10)"),
            ]
        ),
    ),
    Task(
        id="rename_class",
        category="rename",
        goal="Rename the class DataLoader to DatasetLoader across the project, tests included.",
        setup={"loader.py": LOADER_PY, "train.py": TRAIN_PY, "test_loader.py": TEST_LOADER_PY},
        check=" && ".join(
            [word_count("DataLoader", 0), word_count("DatasetLoader", 5), pytest_passes()]
        ),
    ),
]

# fix: a small pytest project whose tests fail; the code is wrong, not the tests --------------

STATS_PY = """\
def mean(values):
    return sum(values) / len(values)


def median(values):
    ordered = sorted(values)
    middle = len(ordered) // 2
    return ordered[middle]
"""

TEST_STATS_PY = """\
from stats import mean, median


def test_mean():
    assert mean([1, 2, 3, 4]) == 2.5


def test_median_odd():
    assert median([3, 1, 2]) == 2


def test_median_even():
    assert median([4, 1, 3, 2]) == 2.5
"""

PYTEST_PATH_TOML = """\
[tool.pytest.ini_options]
pythonpath = ["."]
"""

DATES_PY = """\
def is_leap_year(year):
    return year % 4 == 0


def days_in_year(year):
    return 366 if is_leap_year(year) else 365
"""

TEST_DATES_PY = """\
from dates import days_in_year, is_leap_year


def test_common_years():
    assert is_leap_year(2024)
    assert not is_leap_year(2023)


def test_centuries():
    assert not is_leap_year(1900)
    assert is_leap_year(2000)


def test_days():
    assert days_in_year(2100) == 365
    assert days_in_year(2400) == 366
"""

TEXTUTIL_PY = """\
import re


def slugify(title):
    \"\"\"'Hello, World!' -> 'hello-world'\"\"\"
    words = re.findall(r"[A-Za-z0-9]+", title)
    return "-".join(words)
"""

TEST_TEXTUTIL_PY = """\
from textutil import slugify


def test_punctuation():
    assert slugify("Hello, World!") == "hello-world"


def test_numbers():
    assert slugify("Top 10 Tips") == "top-10-tips"


def test_spaces():
    assert slugify("  many   spaces ") == "many-spaces"
"""

FIX_TASKS = [
    Task(
        id="fix_median",
        category="fix",
        goal="pytest fails on tests/test_stats.py. Fix the code so that the tests pass.",
        setup={
            "pyproject.toml": PYTEST_PATH_TOML,
            "stats.py": STATS_PY,
            "tests/test_stats.py": TEST_STATS_PY,
        },
        check=f"{pytest_passes()} && {unchanged({'tests/test_stats.py': TEST_STATS_PY})}",
    ),
    Task(
        id="fix_leap_year",
        category="fix",
        goal="Fix is_leap_year in dates.py: the tests in test_dates.py fail.",
        setup={"dates.py": DATES_PY, "test_dates.py": TEST_DATES_PY},
        check=f"{pytest_passes()} && {unchanged({'test_dates.py': TEST_DATES_PY})}",
    ),
    Task(
        id="fix_slugify",
        category="fix",
        goal="Run the tests with python3 -m pytest and fix the bug they find.",
        setup={
            "pyproject.toml": PYTEST_PATH_TOML,
            "textutil.py": TEXTUTIL_PY,
            "tests/test_textutil.py": TEST_TEXTUTIL_PY,
        },
        check=f"{pytest_passes()} && {unchanged({'tests/test_textutil.py': TEST_TEXTUTIL_PY})}",
    ),
]

# count and sum: files too long to count by eye; the answer is one exact number ---------------

_EVENTS = [
    ("INFO", "server started on port 8000"),
    ("INFO", "GET /health 200"),
    ("WARN", "slow response from db (1.2 s)"),
    ("ERROR", "payment gateway timeout"),
    ("INFO", "GET /orders 200"),
    ("INFO", "POST /orders 201"),
    ("ERROR", "order 1182 failed validation"),
    ("INFO", "retrying after error in job 7"),
    ("INFO", "GET /orders/1182 404"),
    ("WARN", "cache miss ratio 0.4"),
    ("ERROR", "db connection reset"),
    ("INFO", "reconnected to db"),
]
APP_LOG = "".join(
    f"2026-11-30 08:{minute:02d}:{7 * minute % 60:02d} {level:<5} {message}\n"
    for minute in range(36)
    for level, message in [_EVENTS[5 * minute % len(_EVENTS)]]
)
ERROR_LINES = sum(line.split()[2] == "ERROR" for line in APP_LOG.splitlines())

_IPS = ["10.0.0.5", "10.0.0.17", "192.168.1.20", "10.0.0.5", "172.16.4.2", "192.168.1.20"]
_MORE_IPS = ["10.0.0.9", "172.16.4.2", "10.0.0.5", "203.0.113.7", "10.0.0.17", "10.0.0.90"]
_PAGES = ["/", "/login", "/static/app.js", "/api/items", "/api/items/3", "/logout"]
ACCESS_LOG = "".join(
    f'{ip} - - [30/Nov/2026:10:{i:02d}:00 +0000] "GET {_PAGES[i % 6]} HTTP/1.1" 200 '
    f"{512 + 37 * i}\n"
    for i, ip in enumerate(_IPS * 2 + _MORE_IPS * 2)
)
DISTINCT_IPS = len({line.split()[0] for line in ACCESS_LOG.splitlines()})

SHOP_TREE = {
    "README.md": "# shop\n\nA small shop.\n",
    "setup.py": "from setuptools import setup\n\nsetup(name='shop')\n",
    "src/shop/__init__.py": "",
    "src/shop/cart.py": "class Cart:\n    pass\n",
    "src/shop/db/__init__.py": "",
    "src/shop/db/orders.py": "def save(order):\n    return order\n",
    "src/shop/templates/cart.html": "<ul>{{ items }}</ul>\n",
    "tests/test_cart.py": "from shop.cart import Cart\n\n\ndef test_cart():\n    Cart()\n",
    "docs/index.md": "# Docs\n",
    "scripts/deploy.sh": "#!/bin/sh\necho deploy\n",
}

_SALES = [
    ("2026-01-03", "north", "120.50"),
    ("2026-01-04", "south", "89.99"),
    ("2026-01-04", "east", "240.00"),
    ("2026-01-05", "north", "15.25"),
    ("2026-01-06", "west", "310.10"),
    ("2026-01-06", "south", "74.80"),
    ("2026-01-07", "east", "199.95"),
    ("2026-01-08", "north", "56.40"),
    ("2026-01-09", "west", "402.35"),
    ("2026-01-10", "south", "33.33"),
    ("2026-01-11", "east", "128.00"),
    ("2026-01-12", "north", "61.07"),
]
SALES_CSV = "date,region,amount\n" + "".join(",".join(row) + "\n" for row in _SALES)
SALES_TOTAL = sum(Decimal(amount) for *_, amount in _SALES)

_SCORES = [("ana", 78), ("ben", 92), ("chen", 65), ("dora", 88)]
_SCORES += [("eli", 95), ("fay", 71), ("gus", 84), ("hana", 79)]
SCORES_CSV = "name,score\n" + "".join(f"{name},{score}\n" for name, score in _SCORES)
MEAN_SCORE = sum(score for _, score in _SCORES) / len(_SCORES)

COUNT_TASKS = [
    Task(
        id="count_errors",
        category="count",
        goal="How many ERROR lines are in app.log?",
        setup={"app.log": APP_LOG},
        check=f"{answer_number(ERROR_LINES)} && {untouched({'app.log': APP_LOG})}",
    ),
    Task(
        id="count_python_files",
        category="count",
        goal="How many Python files does this project have, in all its folders?",
        setup=SHOP_TREE,
        check=f"{answer_number(6)} && {untouched(SHOP_TREE)}",
    ),
    Task(
        id="count_ips",
        category="count",
        goal="How many different IP addresses made requests in access.log?",
        setup={"access.log": ACCESS_LOG},
        check=f"{answer_number(DISTINCT_IPS)} && {untouched({'access.log': ACCESS_LOG})}",
    ),
    Task(
        id="sum_column",
        category="sum",
        goal="What is the total of the amount column in sales.csv?",
        setup={"sales.csv": SALES_CSV},
        check=f"{answer_number(float(SALES_TOTAL), 0.005)} && "
        f"{untouched({'sales.csv': SALES_CSV})}",
    ),
    Task(
        id="mean_score",
        category="sum",
        goal="What is the average score in scores.csv?",
        setup={"scores.csv": SCORES_CSV},
        check=f"{answer_number(MEAN_SCORE, 0.005)} && {untouched({'scores.csv': SCORES_CSV})}",
    ),
]

# search: where something is, among files that mention it -------------------------------------

ORDERS_TREE = {
    "shop/__init__.py": "",
    "shop/db/__init__.py": "",
    "shop/db/orders.py": (
        "from shop.db.base import Repository\n\n\nclass OrderRepository(Repository):\n"
        '    table = "orders"\n\n    def by_customer(self, customer_id):\n'
        "        return self.where(customer_id=customer_id)\n"
    ),
    "shop/db/base.py": (
        "class Repository:\n    table = None\n\n    def where(self, **filters):\n"
        "        return [self.table, filters]\n"
    ),
    "shop/db/customers.py": (
        "from shop.db.base import Repository\n\n\nclass CustomerRepository(Repository):\n"
        '    table = "customers"\n'
    ),
    "shop/services.py": (
        "from shop.db.orders import OrderRepository\n\n\ndef orders_of(customer_id):\n"
        "    return OrderRepository().by_customer(customer_id)\n"
    ),
    "tests/test_orders.py": (
        "from shop.db.orders import OrderRepository\n\n\ndef test_table():\n"
        '    assert OrderRepository.table == "orders"\n'
    ),
    "docs/architecture.md": "Data access goes through repositories such as OrderRepository.\n",
}

SETTINGS_TREE = {
    "README.md": "# api\n\nSet DATABASE_URL before you start the server.\n",
    ".env.example": "DATABASE_URL=postgres://localhost/api\nDEBUG=0\n",
    "app/__init__.py": "",
    "app/config.py": (
        'import os\n\nDATABASE_URL = os.environ.get("DATABASE_URL", "sqlite:///dev.db")\n'
        'DEBUG = os.environ.get("DEBUG") == "1"\n'
    ),
    "app/db.py": (
        "from app.config import DATABASE_URL\n\n\ndef connect():\n"
        '    return f"connecting to {DATABASE_URL}"\n'
    ),
    "app/main.py": "from app.db import connect\n\nprint(connect())\n",
}

SERVER_PY = """\
import json
import logging
from http.server import BaseHTTPRequestHandler, HTTPServer

log = logging.getLogger(__name__)

ROUTES = {}


def route(path):
    def register(handler):
        ROUTES[path] = handler
        return handler

    return register


@route("/health")
def health():
    return {"ok": True}


def handle_request(path):
    handler = ROUTES.get(path)
    if handler is None:
        return 404, {"error": "not found"}
    return 200, handler()


class Handler(BaseHTTPRequestHandler):
    def do_GET(self):
        status, body = handle_request(self.path)
        self.send_response(status)
        self.end_headers()
        self.wfile.write(json.dumps(body).encode())


if __name__ == "__main__":
    HTTPServer(("", 8000), Handler).serve_forever()
"""
HANDLE_REQUEST_LINE = SERVER_PY.splitlines().index("def handle_request(path):") + 1

SEARCH_TASKS = [
    Task(
        id="find_class",
        category="search",
        goal="Where is the class OrderRepository defined? Answer with the file path.",
        setup=ORDERS_TREE,
        check=f"{answer_mentions('db/orders.py')} && {untouched(ORDERS_TREE)}",
    ),
    Task(
        id="find_env_var",
        category="search",
        goal="Which Python file reads the DATABASE_URL environment variable?",
        setup=SETTINGS_TREE,
        check=f"{answer_mentions('config.py')} && {untouched(SETTINGS_TREE)}",
    ),
    Task(
        id="find_line",
        category="search",
        goal="On which line of server.py is the function handle_request defined?",
        setup={"server.py": SERVER_PY},
        check=f"{answer_number(HANDLE_REQUEST_LINE)} && {untouched({'server.py': SERVER_PY})}",
    ),
]

# multi: one change over several files, and not over the files it does not concern ------------

MYPKG_TOML = """\
[project]
name = "mypkg"
version = "0.3.1"
description = "Tidy tables"
dependencies = ["pandas>=2"]
"""
MYPKG_INIT = '"""mypkg: tidy tables."""\n\n__version__ = "0.3.1"\n'
CHANGELOG = """\
# Changelog

## 0.3.1

- Fix the header row of empty tables.

## 0.3.0

- First release on PyPI.
"""

SPDX = "# SPDX-License-Identifier: MIT"
HEADER_TREE = {
    "src/app.py": "from utils.strings import shout\n\nprint(shout('hi'))\n",
    "src/models.py": "class Item:\n    name = ''\n",
    "src/utils/strings.py": "def shout(text):\n    return text.upper()\n",
    "tests/test_app.py": "def test_nothing():\n    pass\n",
    "README.md": "# app\n",
}

OLD_DOCS, NEW_DOCS = "http://docs.old-site.org", "https://docs.example.com"
DOCS_TREE = {
    "docs/index.md": f"# Widgets\n\nStart with the [guide]({OLD_DOCS}/guide).\n",
    "docs/install.md": (
        f"# Install\n\n    pip install widgets\n\nSee [{OLD_DOCS}/install]({OLD_DOCS}/install) "
        f"for the details, and [the FAQ]({OLD_DOCS}/faq).\n"
    ),
    "docs/api/reference.md": f"# API\n\nThe full reference is at {OLD_DOCS}/api.\n",
    "README.md": f"# widgets\n\nOld docs: {OLD_DOCS} (archived).\n",
}

MULTI_TASKS = [
    Task(
        id="multi_version",
        category="multi",
        goal="Bump the version from 0.3.1 to 0.4.0 in pyproject.toml and src/mypkg/__init__.py",
        setup={
            "pyproject.toml": MYPKG_TOML,
            "src/mypkg/__init__.py": MYPKG_INIT,
            "CHANGELOG.md": CHANGELOG,
        },
        check=" && ".join(
            [
                data_equals(
                    "pyproject.toml", changed(MYPKG_TOML, "toml", {"project.version": "0.4.0"})
                ),
                output_is(
                    "cd src && python3 -c 'import mypkg; print(mypkg.__doc__, mypkg.__version__)'",
                    "mypkg: tidy tables. 0.4.0",
                ),
                unchanged({"CHANGELOG.md": CHANGELOG}),
            ]
        ),
    ),
    Task(
        id="multi_header",
        category="multi",
        goal=f"Add the line {SPDX} at the top of every .py file in src/",
        setup=HEADER_TREE,
        check=" && ".join(
            [
                *(
                    header_added(path, SPDX, text)
                    for path, text in HEADER_TREE.items()
                    if path.startswith("src/")
                ),
                unchanged({p: t for p, t in HEADER_TREE.items() if not p.startswith("src/")}),
            ]
        ),
    ),
    Task(
        id="multi_replace_url",
        category="multi",
        goal=f"Our docs moved: replace {OLD_DOCS} with {NEW_DOCS} in every file under docs/",
        setup=DOCS_TREE,
        check=" && ".join(
            [
                *(
                    text_equals(path, text.replace(OLD_DOCS, NEW_DOCS))
                    for path, text in DOCS_TREE.items()
                    if path.startswith("docs/")
                ),
                unchanged({"README.md": DOCS_TREE["README.md"]}),
            ]
        ),
    ),
]

# question: answered from the files, none of them changed -------------------------------------

PROJECT_TREE = {
    "pyproject.toml": (
        '[project]\nname = "tally"\nversion = "2.1.0"\nrequires-python = ">=3.10"\n'
        'dependencies = ["requests>=2.31"]\n'
    ),
    "tally/__init__.py": '__version__ = "2.1.0"\n',
    "tally/count.py": "def count(items):\n    return len(list(items))\n",
    "README.md": "# tally\n\nCounts things.\n",
}

REQUIREMENTS_TXT = """\
certifi==2024.2.2
charset-normalizer==3.3.2
idna==3.6
requests-toolbelt==1.0.0
requests==2.31.0
urllib3==2.2.1
"""

TEST_API_PY = """\
from api import create_app


def make_client():
    return create_app(testing=True).test_client()


def test_health():
    assert make_client().get("/health").status_code == 200


def test_login_needs_password():
    assert make_client().post("/login", json={"user": "a"}).status_code == 400


def test_login():
    response = make_client().post("/login", json={"user": "a", "password": "b"})
    assert response.status_code == 200


def test_items_need_login():
    assert make_client().get("/items").status_code == 401


def test_logout():
    assert make_client().post("/logout").status_code == 204
"""

QUESTION_TASKS = [
    Task(
        id="ask_python_version",
        category="question",
        goal="What is the oldest Python version this project supports?",
        setup=PROJECT_TREE,
        check=f"{answer_mentions('3.10')} && {untouched(PROJECT_TREE)}",
    ),
    Task(
        id="ask_pinned_version",
        category="question",
        goal="Which version of requests does requirements.txt pin?",
        setup={"requirements.txt": REQUIREMENTS_TXT},
        check=f"{answer_mentions('2.31.0')} && {untouched({'requirements.txt': REQUIREMENTS_TXT})}",
    ),
    Task(
        id="ask_test_count",
        category="question",
        goal="How many test functions are in tests/test_api.py?",
        setup={"tests/test_api.py": TEST_API_PY},
        check=f"{answer_number(5)} && {untouched({'tests/test_api.py': TEST_API_PY})}",
    ),
]

WORK_TASKS: list[Task] = [
    *CONFIG_TASKS,
    *RENAME_TASKS,
    *FIX_TASKS,
    *COUNT_TASKS,
    *SEARCH_TASKS,
    *MULTI_TASKS,
    *QUESTION_TASKS,
]
