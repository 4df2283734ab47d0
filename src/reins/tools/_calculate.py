"""`calculate`: exact arithmetic for a model that has no `run_command` to compute with.

Small models add and count wrong when they work it out in their heads. The expression is
parsed with `ast` and only numbers, arithmetic operators, parentheses, lists and a few
functions are evaluated (never `eval`); numbers are exact fractions, so `0.1 + 0.2` is `0.3`.
"""

from __future__ import annotations

import ast
import math
from collections.abc import Callable
from fractions import Fraction
from typing import Any

from ..core._errors import ToolError
from ._tool import tool

MAX_CHARS = 2000
MAX_BITS = 20_000
"""How large a number may grow (about 6,000 digits): `9**9**9` is refused, not computed."""
ALLOWED = "numbers, + - * / // % **, parentheses, [lists] and sum, min, max, round, abs, len"

Number = Fraction | float


def _sum(*args: Any) -> Any:
    return sum(_items(args), Fraction(0))


def _round(value: Any, digits: Any = None) -> Any:
    if digits is None:
        return Fraction(round(value))
    if not (isinstance(digits, Fraction) and digits.denominator == 1):
        raise ToolError("round(x, n): n must be a whole number")
    return round(value, int(digits))


def _items(args: tuple[Any, ...]) -> list[Any]:
    """`f([1, 2])` and `f(1, 2)` alike: small models write both."""
    if len(args) == 1 and isinstance(args[0], list):
        return list(args[0])
    return list(args)


def _pick(choose: Callable[[list[Any]], Any]) -> Callable[..., Any]:
    def picked(*args: Any) -> Any:
        items = _items(args)
        if not items or any(isinstance(i, list) for i in items):
            raise ToolError("min and max take numbers, or one list of numbers")
        return choose(items)

    return picked


FUNCTIONS: dict[str, Callable[..., Any]] = {
    "sum": _sum,
    "min": _pick(min),
    "max": _pick(max),
    "round": _round,
    "abs": abs,
    "len": lambda *args: Fraction(len(_items(args))),
}

_OPERATORS: dict[type[ast.operator], Callable[[Any, Any], Any]] = {
    ast.Add: lambda a, b: a + b,
    ast.Sub: lambda a, b: a - b,
    ast.Mult: lambda a, b: a * b,
    ast.Div: lambda a, b: a / b,
    ast.FloorDiv: lambda a, b: Fraction(a // b),
    ast.Mod: lambda a, b: a % b,
}


@tool(read_only=True, timeout=10.0)
def calculate(expression: str) -> str:
    """Work out arithmetic exactly: numbers, + - * / // % **, parentheses, lists, and sum,
    min, max, round, abs, len.

    Args:
        expression: Such as `sum([12, 7.5, 30]) / 3` or `round(17 / 3, 2)`.
    """
    return format_number(evaluate(expression))


def evaluate(expression: str) -> Number:
    """The value of an arithmetic expression, or a ToolError saying what is not allowed."""
    text = expression.strip().replace("×", "*").replace("÷", "/").replace("−", "-")
    if not text:
        raise ToolError("expression is empty: give the arithmetic to work out, such as 2 + 3")
    if len(text) > MAX_CHARS:
        raise ToolError(f"expression has {len(text)} characters; at most {MAX_CHARS}")
    try:
        tree = ast.parse(text, mode="eval")
        value = _value(tree.body)
    except SyntaxError as exc:
        raise ToolError(f"not an arithmetic expression ({exc.msg}); allowed: {ALLOWED}") from None
    except RecursionError:
        raise ToolError("the expression is nested too deeply: work it out in parts") from None
    except ZeroDivisionError:
        raise ToolError("division by zero") from None
    except (OverflowError, ValueError) as exc:
        raise ToolError(f"cannot work that out: {exc}") from None
    if isinstance(value, list):
        raise ToolError("the expression is a list, not a number: sum it, or take its min or max")
    return _number(value)


def _value(node: ast.expr) -> Any:
    match node:
        case ast.Constant(value=bool() as truth):
            raise ToolError(f"{truth} is not a number; allowed: {ALLOWED}")
        case ast.Constant(value=int() | float() as number):
            if isinstance(number, float) and not math.isfinite(number):
                raise ToolError("that number is too large")
            return Fraction(number) if isinstance(number, int) else Fraction(repr(number))
        case ast.UnaryOp(op=ast.USub(), operand=operand):
            return -_number(_value(operand))
        case ast.UnaryOp(op=ast.UAdd(), operand=operand):
            return +_number(_value(operand))
        case ast.BinOp(left=left, op=ast.Pow(), right=right):
            return _checked(_power(_number(_value(left)), _number(_value(right))))
        case ast.BinOp(left=left, op=op, right=right) if type(op) in _OPERATORS:
            a, b = _number(_value(left)), _number(_value(right))
            return _checked(_OPERATORS[type(op)](a, b))
        case ast.List(elts=items) | ast.Tuple(elts=items):
            return [_number(_value(item)) for item in items]
        case ast.Call(func=ast.Name(id=name), args=args, keywords=[]) if name in FUNCTIONS:
            if any(isinstance(a, ast.Starred) for a in args):
                raise ToolError(f"*arguments are not allowed; allowed: {ALLOWED}")
            return _checked(FUNCTIONS[name](*(_value(a) for a in args)))
        case ast.Call(func=ast.Name(id=name)):
            raise ToolError(f"{name}(...) is not one of the functions; allowed: {ALLOWED}")
        case ast.Name(id=name):
            raise ToolError(f"{name!r} is not a number: put the number itself; allowed: {ALLOWED}")
    raise ToolError(f"{ast.unparse(node)!r} is not arithmetic; allowed: {ALLOWED}")


def _number(value: Any) -> Number:
    if isinstance(value, list):
        raise ToolError("a list is not a number here: sum it, or take its min or max")
    number: Number = value
    return number


def _power(base: Number, exponent: Number) -> Number:
    if isinstance(exponent, Fraction) and exponent.denominator == 1:
        bits = max(_bits(base), 1) * abs(exponent.numerator)
        if bits > MAX_BITS:
            raise ToolError("that power is too large to work out")
        power: Number = base**exponent.numerator
        return power
    if base < 0:
        raise ToolError("a negative number to a fractional power is not a real number")
    return math.pow(float(base), float(exponent))


def _bits(value: Number) -> int:
    if isinstance(value, float):
        return 64
    return max(abs(value.numerator).bit_length(), value.denominator.bit_length())


def _checked(value: Any) -> Any:
    if isinstance(value, Fraction) and _bits(value) > MAX_BITS:
        raise ToolError("the result is too large to work out")
    if isinstance(value, float) and not math.isfinite(value):
        raise ToolError("the result is too large to work out")
    return value


def format_number(value: Number) -> str:
    """An integer as itself; a fraction with a finite decimal exactly; others to 15 digits."""
    if isinstance(value, float):
        return format(value, ".15g")
    if value.denominator == 1:
        return str(value.numerator)
    denominator = value.denominator
    for prime in (2, 5):
        while denominator % prime == 0:
            denominator //= prime
    if denominator == 1 and value.denominator < 10**30:
        scale = 0
        while (value * 10**scale).denominator != 1:
            scale += 1
        digits = str(abs(value.numerator * 10**scale // value.denominator)).rjust(scale + 1, "0")
        sign = "-" if value < 0 else ""
        return f"{sign}{digits[:-scale]}.{digits[-scale:]}"
    return format(float(value), ".15g")
