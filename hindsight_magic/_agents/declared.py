"""An agent's tool made from its operation's declaration (``_operations``), for both MCP
front ends: the stand-alone server (``server.py``) and jupyter-server-mcp's (``jupyter.py``).

Both SDKs read a tool's JSON schema from its function's signature: each parameter's
``Annotated[type, Field(description=…)]``. ``tool_function`` makes that signature from the
declared parameters (the kind gives the type, the help and bounds the description, the
bounds and default the schema's ``minimum``, ``maximum`` and ``default``) and the
docstring from the operation's summary, so a parameter added to the declaration reaches
both servers, with its words, unwritten here.
"""

from __future__ import annotations

import inspect
import re
from collections.abc import Callable
from typing import Annotated, Any, Literal, TypeVar

from .._operations import KINDS, Operation, Param

T = TypeVar("T")


SPOKEN = {"WHEN": "the time given", "N": "the number given", "NAME": "the name given"}


def sentence(param: Param) -> str:
    """A parameter's help as a model reads it: no reST markup, the value's name in the usage
    (``WHEN``) said in words, a capital, a full stop."""
    plain = re.sub(r"``(.*?)``", r"\1", param.description)
    if param.metavar in SPOKEN:
        plain = re.sub(rf"\b{param.metavar}\b", SPOKEN[param.metavar], plain)
    return f"{plain[:1].upper()}{plain[1:]}."


def annotation(param: Param) -> Any:
    """``Annotated[str | None, Field(description=…)]`` for ``param``: its kind's type
    (``_operations.KINDS``), its bounds and default in the JSON schema (``minimum``,
    ``maximum``, ``default``). The bounds are said, not enforced here: the request the
    arguments make checks them (``Param.check``), so an agent's bad value reads as every
    front end's. A count is strict: a boolean is not a count, though lax validation takes
    ``true`` for 1."""
    from pydantic import Field

    kind = Literal[param.choices] if param.choices else KINDS[param.kind].python
    field = Field(
        description=sentence(param),
        strict=param.kind == "count" or None,
        json_schema_extra=param.schema or None,
    )
    return Annotated[kind if param.required else kind | None, field]


def tool_function(
    operation: Operation, call: Callable[..., T], context: Any = None
) -> Callable[..., T]:
    """A function named after ``operation``, with its declared parameters as its signature
    (optional ones default to their declared default, else None) and its summary as its
    docstring, that passes its arguments to ``call`` by name. ``context``: the SDK's request
    context type, asked for as one more argument, ``ctx`` (the SDK fills it; it is not in
    the tool's schema)."""
    parameters = [
        inspect.Parameter(
            param.name,
            inspect.Parameter.KEYWORD_ONLY,
            default=inspect.Parameter.empty if param.required else param.default,
            annotation=annotation(param),
        )
        for param in operation.params
    ]
    if context is not None:
        parameters.append(
            inspect.Parameter("ctx", inspect.Parameter.KEYWORD_ONLY, annotation=context)
        )

    def tool(**arguments: Any) -> T:
        return call(**arguments)

    tool.__name__ = tool.__qualname__ = operation.name
    tool.__doc__ = operation.summary
    tool.__signature__ = inspect.Signature(parameters)  # type: ignore[attr-defined]
    tool.__annotations__ = {p.name: p.annotation for p in parameters}
    return tool
