"""A function's source lines are what ``inspect.getsourcelines`` finds, for every shape of
``def`` a kernel file holds, and reading a kernel's source runs no tokenizer when its block ends
plainly."""

from __future__ import annotations

import ast
import importlib
import inspect
import textwrap
import tokenize
import types
from collections.abc import Callable, Iterator

import pytest

from cubejit.lang.source_lines import parsed_source_lines, source_lines, unparsed_source_lines

SHAPES = '''
@cj.kernel
def plain(x: cj.Array[cj.f32]):
    x[0] = 1.0


@cj.kernel
def header_over_lines(a: cj.f32, x: cj.Array[cj.f32],
y: cj.Array[cj.f32]):
    i = cj.ABSOLUTE_POS
    if i < x.len():
        x[i] = a * y[i]
    # a comment indented as the body belongs to the block

# one at the def's column does not
    # nor one after it


def trailing_comment_deeper(x):
    """A docstring first."""
    return x
        # deeper than the body: kept


def string_at_column_zero(x):
    y = """
text at column zero
"""
    return y


def continued_at_column_zero(x):
    y = (1 +
2)
    return y + x


def one_liner(x): return x


def only_a_docstring():
    """Nothing else."""


class Holder:
    @staticmethod
    @functools.lru_cache(
        maxsize=None,
    )
    def decorated(x):
        if x:
            return 1
        else:
            return 2

    def method(self):
        return [
    1, 2]


def nested_def(x):
    def inner(y):
        return y

    return inner(x)


def last_in_file(x):
    return x'''


def functions_of(module: types.ModuleType) -> Iterator[types.FunctionType]:
    for value in vars(module).values():
        if isinstance(value, type):
            for member in vars(value).values():
                fn = getattr(member, "__func__", member)
                fn = getattr(fn, "__wrapped__", fn)
                if isinstance(fn, types.FunctionType) and fn.__module__ == module.__name__:
                    yield fn
        fn = getattr(value, "fn", value)
        if isinstance(fn, types.FunctionType) and fn.__module__ == module.__name__:
            yield fn


def read(reader: Callable[[types.FunctionType], object], fn: types.FunctionType) -> object:
    """What ``reader`` answers for ``fn``, or the type of what it raised."""
    try:
        return reader(fn)
    except (OSError, TypeError) as e:
        return type(e)


def test_every_shape_of_def_reads_as_inspect_reads_it(
    module: Callable[[str], types.ModuleType],
) -> None:
    found = module("import functools\n" + SHAPES)
    functions = list(functions_of(found))
    assert len(functions) == 11
    for fn in functions:
        assert source_lines(fn) == inspect.getsourcelines(fn), fn.__qualname__


def test_the_parse_read_with_the_lines_is_the_parse_of_their_dedented_text(
    module: Callable[[str], types.ModuleType],
) -> None:
    found = module("import functools\n" + SHAPES)
    parsed_any = False
    for fn in functions_of(found):
        lines, _, parsed = parsed_source_lines(fn)
        if parsed is not None:
            parsed_any = True
            expected = ast.parse(textwrap.dedent("".join(lines)))
            assert ast.dump(parsed, include_attributes=True) == ast.dump(
                expected, include_attributes=True
            ), fn.__qualname__
    assert parsed_any


@pytest.mark.parametrize(
    "name",
    [
        "tests.backends.cpu.meaning_kernels",
        "tests.backends.cpu.porter_kernels",
        "cubejit.std.reductions",
        "cubejit.std.scan",
        "cubejit.std.rows",
        "cubejit.std.histograms",
    ],
)
def test_the_project_s_own_kernels_read_as_inspect_reads_them(name: str) -> None:
    functions = list(functions_of(importlib.import_module(name)))
    assert functions
    for fn in functions:
        assert read(source_lines, fn) == read(inspect.getsourcelines, fn), fn.__qualname__


def test_reading_a_kernel_s_source_runs_no_tokenizer(
    module: Callable[[str], types.ModuleType], monkeypatch: pytest.MonkeyPatch
) -> None:
    found = module("import functools\n" + SHAPES)
    runs: list[object] = []
    real = tokenize.generate_tokens

    def counting(*args: object, **kwargs: object) -> object:
        runs.append(args)
        return real(*args, **kwargs)  # type: ignore[arg-type]

    monkeypatch.setattr(tokenize, "generate_tokens", counting)
    source = found.header_over_lines.source
    assert source.text.startswith("@cj.kernel\ndef header_over_lines(")
    assert runs == []


def test_lines_read_without_parsing_end_on_the_last_code_line_or_are_not_read(
    module: Callable[[str], types.ModuleType],
) -> None:
    found = module("import functools\n" + SHAPES)
    unsure = []
    for fn in functions_of(found):
        unparsed = unparsed_source_lines(fn)
        lines, first_line = inspect.getsourcelines(fn)
        if unparsed is None:
            unsure.append(fn.__name__)
            continue
        assert unparsed[1] == first_line, fn.__qualname__
        assert unparsed[0] == lines[: len(unparsed[0])], fn.__qualname__
        rest = lines[len(unparsed[0]) :]
        assert all(not line.strip() or line.strip().startswith("#") for line in rest)
    assert "string_at_column_zero" in unsure and "continued_at_column_zero" in unsure
    assert "plain" not in unsure and "header_over_lines" not in unsure
