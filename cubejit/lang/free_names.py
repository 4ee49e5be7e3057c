"""The free names a function's source reads, found without parsing it: from its words, checked
against its code object.

A kernel's identity hashes what each free name (and ``module.attr`` chain) of the kernel and of
every function it reaches means now (:mod:`cubejit.lang.identity`). A warm process needs that
identity on a kernel's first launch, before anything else, and parsing each source and walking
its syntax tree was most of that launch. :func:`free_chains` reads the names off the text
instead: every dotted word (``cj.f32``, ``x``) that is no keyword, number or attribute of
another expression (``x[i].foo``), whose first name is not a local of the function, with every
prefix of its chain, as :attr:`~cubejit.lang.source.PySource.free_chains` finds them. Comments
are left out (where no quote precedes them on their line); strings are not, so a word of a
docstring or a keyword argument's name is looked up too: that may add a part to an identity,
never remove one. No regular expression either: compiling one costs a fresh process more than
the whole reading.

A chain spelled apart (``x .y``, ``x. y``, a line continued after a dot) is read whole as well
as in pieces. It is trusted only when the code object agrees: every name the compiled code reads
as a global, an attribute or a closure cell (``co_names`` and ``co_freevars``, nested code
objects included) must be among the words; otherwise :func:`free_chains` answers ``None`` and
the caller parses.
"""

from __future__ import annotations

import keyword
import string
import types

_WORDS = str.maketrans(
    {c: " " for c in map(chr, range(128)) if c not in string.ascii_letters + string.digits + "_."}
)
"""Every ASCII character that cannot be part of a dotted name, made a space (names may hold
other letters: those stay)."""

Chain = tuple[str, tuple[str, ...]]


def free_chains(fn: types.FunctionType, text: str) -> tuple[Chain, ...] | None:
    """Each free name ``fn``'s source ``text`` reads, with the attribute chain read off it
    (``cj.f32`` is ``("cj", ("f32",))``, and ``("cj", ())`` is there too); ``None`` when the
    text and the code object do not agree (the caller parses the source)."""
    code = fn.__code__
    reads: set[str] = set(code.co_freevars)
    nested_locals: set[str] = set()
    for inner in _code_objects(code):
        reads.update(inner.co_names)
        if inner is not code:
            nested_locals.update(inner.co_varnames, inner.co_cellvars)
    own = set(code.co_varnames) | set(code.co_cellvars) | (nested_locals - reads)
    if fn.__name__ not in reads:
        own.add(fn.__name__)
    seen: set[str] = set()
    found: set[Chain] = set()
    for word in set(_words(text)):
        if word[0].isdigit():
            continue
        if word[0] == ".":
            seen.update(word.split("."))
            continue
        names = word.rstrip(".").split(".")
        chains = [names] if "" not in names else [[n] for n in names if n]
        for names in chains:
            seen.update(names)
            base = names[0]
            if base in own or keyword.iskeyword(base):
                continue
            chain = tuple(names[1:])
            found.update((base, chain[:length]) for length in range(len(chain) + 1))
    if not reads <= seen:
        return None
    return tuple(sorted(found))


def _uncommented(text: str) -> str:
    """``text`` without the comments that no quote precedes on their line."""
    if "#" not in text:
        return text
    lines = text.split("\n")
    for i, line in enumerate(lines):
        before, mark, _ = line.partition("#")
        if mark and "'" not in before and '"' not in before:
            lines[i] = before
    return "\n".join(lines)


def _words(text: str) -> list[str]:
    """The dotted words of ``text``, each as it stands and again glued to a neighbour across a
    space beside a dot (``x .y``, ``x. y``, a line continued after a dot), so that a chain
    spelled apart is read whole as well as in pieces."""
    words = _uncommented(text).translate(_WORDS).split()
    glued: list[str] = []
    for word in words:
        if glued and (glued[-1].endswith(".") or word.startswith(".")):
            glued[-1] += word
        else:
            glued.append(word)
    return words + glued


def _code_objects(code: types.CodeType) -> list[types.CodeType]:
    """``code`` and every code object nested in it (functions, lambdas, comprehensions)."""
    found = [code]
    for const in code.co_consts:
        if isinstance(const, types.CodeType):
            found.extend(_code_objects(const))
    return found
