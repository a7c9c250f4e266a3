"""Per-language definition queries and the few rules tree-sitter grammars do not share.

Each :class:`Spec` holds a tree-sitter query whose patterns capture a
definition node as ``@definition.<kind>`` (or ``@definition.scope`` for a
container that is no symbol itself, such as a Rust ``impl``) and its name as
``@name``, plus small hooks: how to read the name (C declarators, Go receivers,
C++ ``Foo::bar``), which parent nodes belong to the definition's text
(``export``, decorators, ``template<>``), and which comment node types attach.

The language pack 0.13.0 bundles grammars but no tags queries, so these
queries are written here for the kinds, nesting and spans the symbol layer needs.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import tree_sitter

    from grinta_jupyter.code.symbols import _Entry

# (qualifier parts, simple name, kind override or None)
Name = tuple[tuple[str, ...], str, "str | None"]
Captures = dict[str, list["tree_sitter.Node"]]


def _text(node: tree_sitter.Node, source: bytes) -> str:
    return source[node.start_byte : node.end_byte].decode("utf-8", "replace")


def _split(text: str, separators: Iterable[str] = ("::", ".")) -> tuple[tuple[str, ...], str]:
    """``a::b::c`` or ``a.b.c`` -> (("a", "b"), "c")."""
    for separator in separators:
        text = text.replace(separator, "\x00")
    parts = [part.strip() for part in text.split("\x00")]
    parts = [part for part in parts if part]
    if not parts:
        return (), ""
    return tuple(parts[:-1]), parts[-1]


def _plain_name(kind: str, core: tree_sitter.Node, captures: Captures, source: bytes) -> list[Name]:
    names = captures.get("name")
    if not names:
        return []
    return [((), _text(names[0], source), None)]


def _dotted_name(
    kind: str, core: tree_sitter.Node, captures: Captures, source: bytes
) -> list[Name]:
    """Names that may be qualified where they are written (``module A.B``, ``class Foo::Bar``)."""
    names = captures.get("name")
    if not names:
        return []
    text = _text(names[0], source)
    if names[0].type == "string":
        text = text.strip("'\"`")
        return [((), text, None)]
    prefix, name = _split(text)
    return [(prefix, name, None)]


def _never(parent: tree_sitter.Node, node: tree_sitter.Node) -> bool:
    return False


def _no_method(entry: _Entry, parent_kind: str | None) -> bool:
    return False


def _keep(entries: list[_Entry]) -> list[_Entry]:
    return entries


@dataclass(frozen=True)
class Spec:
    """How to find definitions in one language."""

    language: str
    query: str
    attached: frozenset[str]  # node types that attach above a definition (comments, attributes)
    names: Callable[[str, tree_sitter.Node, Captures, bytes], list[Name]] = _plain_name
    wraps: Callable[[tree_sitter.Node, tree_sitter.Node], bool] = _never
    # Functions directly inside these kinds are methods.
    method_containers: frozenset[str] = frozenset(
        {"class", "struct", "interface", "trait", "enum", "scope"}
    )
    is_method: Callable[[_Entry, str | None], bool] = _no_method
    postprocess: Callable[[list[_Entry]], list[_Entry]] = _keep
    leading_siblings: frozenset[str] = field(default_factory=frozenset)
    # A `;` right after the definition node is part of it (C/C++ types, JS/TS class members).
    eat_semicolon: bool = False


# --- Python -----------------------------------------------------------------

_PYTHON = """
(function_definition name: (identifier) @name) @definition.function
(class_definition name: (identifier) @name) @definition.class
(module
  (assignment left: (identifier) @name) @definition.constant
  (#match? @name "^_*[A-Z][A-Z0-9_]*$"))
"""


def _python_wraps(parent: tree_sitter.Node, node: tree_sitter.Node) -> bool:
    return parent.type == "decorated_definition"


# --- JavaScript / TypeScript --------------------------------------------------

_FUNCTION_VALUES = "[(arrow_function) (function_expression) (generator_function)]"

_JAVASCRIPT = f"""
(function_declaration name: (identifier) @name) @definition.function
(generator_function_declaration name: (identifier) @name) @definition.function
(class_declaration name: (_) @name) @definition.class
(class_body (method_definition name: (_) @name) @definition.method)
(lexical_declaration
  (variable_declarator name: (identifier) @name value: {_FUNCTION_VALUES})) @definition.function
(variable_declaration
  (variable_declarator name: (identifier) @name value: {_FUNCTION_VALUES})) @definition.function
(program
  (lexical_declaration "const"
    (variable_declarator name: (identifier) @name value: (_) @value)) @definition.constant)
(program (export_statement
  (lexical_declaration "const"
    (variable_declarator name: (identifier) @name value: (_) @value)) @definition.constant))
"""

_JAVASCRIPT_ONLY = f"""
(class_body (field_definition property: (_) @name value: {_FUNCTION_VALUES}) @definition.method)
"""

_TYPESCRIPT = (
    _JAVASCRIPT
    + f"""
(abstract_class_declaration name: (_) @name) @definition.class
(interface_declaration name: (_) @name) @definition.interface
(type_alias_declaration name: (_) @name) @definition.type
(enum_declaration name: (_) @name) @definition.enum
(internal_module name: (_) @name) @definition.namespace
(module name: (_) @name) @definition.module
(function_signature name: (_) @name) @definition.function
(class_body (method_signature name: (_) @name) @definition.method)
(class_body (abstract_method_signature name: (_) @name) @definition.method)
(class_body (public_field_definition name: (_) @name value: {_FUNCTION_VALUES}) @definition.method)
"""
)

_FUNCTION_NODES = frozenset({"arrow_function", "function_expression", "generator_function"})


def _js_names(kind: str, core: tree_sitter.Node, captures: Captures, source: bytes) -> list[Name]:
    if kind == "constant":
        value = captures.get("value")
        if value and value[0].type in _FUNCTION_NODES:
            return []  # the function pattern reports it
    if kind in ("module", "namespace"):
        return _dotted_name(kind, core, captures, source)
    return _plain_name(kind, core, captures, source)


def _js_wraps(parent: tree_sitter.Node, node: tree_sitter.Node) -> bool:
    if parent.type in ("export_statement", "ambient_declaration"):
        return True
    # `namespace N {}` parses as an expression statement holding the namespace.
    return parent.type == "expression_statement" and node.type == "internal_module"


_SIGNATURES = frozenset({"function_signature", "method_signature"})


def _ts_merge_overloads(entries: list[_Entry]) -> list[_Entry]:
    """Overload signatures directly above an implementation become part of its span."""
    kept: list[_Entry] = []
    pending: list[_Entry] = []
    for entry in entries:
        if entry.core.type in _SIGNATURES:
            if pending and pending[-1].parts != entry.parts:
                kept.extend(pending)
                pending = []
            pending.append(entry)
            continue
        if pending and pending[0].parts == entry.parts and entry.kind == pending[0].kind:
            # The implementation stays the core (def line, signature).
            entry.span, entry.start = pending[0].span, pending[0].start
            pending = []
        kept.extend(pending)
        pending = []
        kept.append(entry)
    kept.extend(pending)
    return kept


# --- Go -----------------------------------------------------------------------

_GO = """
(function_declaration name: (identifier) @name) @definition.function
(method_declaration
  receiver: (parameter_list (parameter_declaration type: (_) @receiver))
  name: (field_identifier) @name) @definition.method
(type_declaration (type_spec name: (type_identifier) @name type: (_) @type) @definition.type)
(type_declaration (type_alias name: (type_identifier) @name) @definition.type)
(const_declaration (const_spec) @definition.constant)
"""

_GO_TYPE_KINDS = {"struct_type": "struct", "interface_type": "interface"}


def _go_receiver(node: tree_sitter.Node, source: bytes) -> str:
    while node.type in ("pointer_type", "generic_type", "parenthesized_type"):
        inner = node.child_by_field_name("type") or (
            node.named_children[-1] if node.named_children else None
        )
        if inner is None:
            break
        node = inner
    return _text(node, source)


def _go_names(kind: str, core: tree_sitter.Node, captures: Captures, source: bytes) -> list[Name]:
    if kind == "constant":
        return [
            ((), _text(name, source), None)
            for name in core.children_by_field_name("name")
            if name.type == "identifier"
        ]
    names = _plain_name(kind, core, captures, source)
    if kind == "method" and names:
        receiver = _go_receiver(captures["receiver"][0], source)
        return [((receiver,), names[0][1], None)]
    if kind == "type" and names and "type" in captures:
        return [((), names[0][1], _GO_TYPE_KINDS.get(captures["type"][0].type))]
    return names


def _go_wraps(parent: tree_sitter.Node, node: tree_sitter.Node) -> bool:
    # `type T struct{}` is one declaration holding one spec; a grouped
    # `type ( ... )` keeps each spec as its own span.
    if parent.type not in ("type_declaration", "const_declaration"):
        return False
    specs = [c for c in parent.named_children if c.type not in ("comment",)]
    return len(specs) == 1


# --- Rust ---------------------------------------------------------------------

_RUST = """
(function_item name: (identifier) @name) @definition.function
(function_signature_item name: (identifier) @name) @definition.function
(struct_item name: (type_identifier) @name) @definition.struct
(union_item name: (type_identifier) @name) @definition.struct
(enum_item name: (type_identifier) @name) @definition.enum
(trait_item name: (type_identifier) @name) @definition.trait
(type_item name: (type_identifier) @name) @definition.type
(mod_item name: (identifier) @name) @definition.module
(const_item name: (identifier) @name) @definition.constant
(static_item name: (identifier) @name) @definition.constant
(impl_item type: (_) @name) @definition.scope
"""


def _rust_type_name(node: tree_sitter.Node, source: bytes) -> str:
    while True:
        if node.type in ("generic_type", "reference_type", "pointer_type"):
            inner = node.child_by_field_name("type")
        elif node.type == "scoped_type_identifier":
            inner = node.child_by_field_name("name")
        else:
            return _text(node, source)
        if inner is None:
            return _text(node, source)
        node = inner


def _rust_names(kind: str, core: tree_sitter.Node, captures: Captures, source: bytes) -> list[Name]:
    if kind == "scope":
        return [((), _rust_type_name(captures["name"][0], source), None)]
    return _plain_name(kind, core, captures, source)


# --- Java ---------------------------------------------------------------------

_JAVA = """
(class_declaration name: (identifier) @name) @definition.class
(record_declaration name: (identifier) @name) @definition.class
(interface_declaration name: (identifier) @name) @definition.interface
(annotation_type_declaration name: (identifier) @name) @definition.interface
(enum_declaration name: (identifier) @name) @definition.enum
(method_declaration name: (identifier) @name) @definition.method
(constructor_declaration name: (identifier) @name) @definition.method
(compact_constructor_declaration name: (identifier) @name) @definition.method
"""

_JAVA_TYPE_DECLARATIONS = frozenset(
    {
        "class_declaration",
        "record_declaration",
        "interface_declaration",
        "annotation_type_declaration",
        "enum_declaration",
    }
)


def _java_names(kind: str, core: tree_sitter.Node, captures: Captures, source: bytes) -> list[Name]:
    if kind == "method":
        # Methods of anonymous classes and enum-constant bodies are not addressable.
        body = core.parent
        if body is not None and body.type == "enum_body_declarations":
            body = body.parent
        owner = body.parent if body is not None else None
        if owner is None or owner.type not in _JAVA_TYPE_DECLARATIONS:
            return []
    return _plain_name(kind, core, captures, source)


# --- C / C++ ------------------------------------------------------------------

_C = """
(function_definition declarator: (_) @declarator) @definition.function
(struct_specifier name: (_) @name body: (_)) @definition.struct
(union_specifier name: (_) @name body: (_)) @definition.struct
(enum_specifier name: (_) @name body: (_)) @definition.enum
(type_definition type: (_) @type declarator: (_) @declarator) @definition.type
(translation_unit (preproc_def name: (identifier) @name value: (_)) @definition.constant)
"""

_CPP = (
    _C
    + """
(class_specifier name: (_) @name body: (_)) @definition.class
(namespace_definition name: (_) @name) @definition.namespace
(alias_declaration name: (_) @name) @definition.type
"""
)

_DECLARATOR_WRAPPERS = frozenset(
    {
        "pointer_declarator",
        "reference_declarator",
        "parenthesized_declarator",
        "attributed_declarator",
        "array_declarator",
        "function_declarator",
    }
)


def _declarator_name(node: tree_sitter.Node) -> tree_sitter.Node | None:
    """The identifier a C/C++ declarator declares (``*(*f)(int)`` -> ``f``)."""
    while node.type in _DECLARATOR_WRAPPERS:
        inner = node.child_by_field_name("declarator")
        if inner is None:
            named = [c for c in node.named_children if c.type not in ("type_qualifier",)]
            if not named:
                return None
            inner = named[-1]
        node = inner
    return node


def _c_names(kind: str, core: tree_sitter.Node, captures: Captures, source: bytes) -> list[Name]:
    if kind in ("function", "type") and "declarator" in captures:
        declarator = _declarator_name(captures["declarator"][0])
        if declarator is None:
            return []
        if kind == "type":
            type_node = captures["type"][0]
            is_struct = type_node.type in ("struct_specifier", "union_specifier")
            has_body = type_node.child_by_field_name("body") is not None
            override = "struct" if is_struct and has_body else None
            if type_node.type == "enum_specifier" and has_body:
                override = "enum"
            return [((), _text(declarator, source), override)]
        if declarator.type == "template_function":
            declarator = declarator.child_by_field_name("name") or declarator
        if declarator.type == "qualified_identifier":
            prefix, name = _split(_text(declarator, source), ("::",))
            # Drop template arguments from qualifiers: `Foo<T>::bar` -> Foo.bar.
            prefix = tuple(part.split("<", 1)[0].strip() for part in prefix)
            return [(prefix, name, None)]
        return [((), _text(declarator, source), None)]
    if kind in ("class", "struct", "enum") and captures.get("name"):
        name_node = captures["name"][0]
        if name_node.type == "template_type":
            name_node = name_node.child_by_field_name("name") or name_node
        prefix, name = _split(_text(name_node, source), ("::",))
        return [(prefix, name, None)]
    return _dotted_name(kind, core, captures, source)


_C_SPECIFIERS = frozenset(
    {"struct_specifier", "union_specifier", "enum_specifier", "class_specifier"}
)


def _c_wraps(parent: tree_sitter.Node, node: tree_sitter.Node) -> bool:
    if parent.type == "template_declaration":
        return True
    # `struct S {...};` / `typedef struct S {...} T;`: the declaration is the span.
    return (
        node.type in _C_SPECIFIERS
        and parent.type in ("declaration", "field_declaration", "type_definition")
        and parent.child_by_field_name("type") == node
    )


def _cpp_is_method(entry: _Entry, parent_kind: str | None) -> bool:
    # `void Foo::bar() {}` defines a member of Foo; `_cpp_postprocess` turns it
    # back into a function when Foo is a namespace of the same file.
    return bool(entry.prefix)


def _cpp_postprocess(entries: list[_Entry]) -> list[_Entry]:
    namespaces = {entry.name for entry in entries if entry.kind == "namespace"}
    for entry in entries:
        if entry.kind == "method" and entry.prefix and entry.prefix[-1] in namespaces:
            entry.kind = "function"
    return entries


def declared_names(core: tree_sitter.Node, source: bytes) -> list[str] | None:
    """Every name the statement holding definition ``core`` declares, when it declares
    more than one thing (None: it declares only its definition).

    ``const a = () => 1, b = 2;``, Go's ``const A, B = 1, 2``, C's ``typedef int I, J;``
    and ``struct S {...} s1, s2;``, Python's ``A = B = 1``: the definition's span is the
    whole statement, so an edit of its text changes the other names too.
    """
    names: list[tree_sitter.Node] = []
    parent = core.parent
    if core.type in ("lexical_declaration", "variable_declaration"):
        for declarator in core.named_children:
            if declarator.type == "variable_declarator":
                name = declarator.child_by_field_name("name")
                names.extend([name] if name is not None else [])
    elif core.type == "const_spec":
        names = [name for name in core.children_by_field_name("name") if name.is_named]
    elif core.type == "type_definition" or (
        core.type in _C_SPECIFIERS
        and parent is not None
        and parent.type in ("declaration", "field_declaration", "type_definition")
        and parent.child_by_field_name("type") == core
    ):
        holder = core if core.type == "type_definition" else parent
        assert holder is not None
        # `typedef struct M {...} M_t;` declares the tag M as well as M_t.
        specifier = holder.child_by_field_name("type")
        own = None
        if specifier is not None and specifier.type in _C_SPECIFIERS:
            own = specifier.child_by_field_name("name")
        declarators = [
            _declarator_name(d) for d in holder.children_by_field_name("declarator") if d.is_named
        ]
        names = [*([own] if own is not None else []), *(d for d in declarators if d is not None)]
    elif core.type == "assignment":  # Python: `A = B = 1`
        node: tree_sitter.Node | None = core
        while node is not None and node.type == "assignment":
            left = node.child_by_field_name("left")
            names.extend([left] if left is not None else [])
            node = node.child_by_field_name("right")
    distinct = list(dict.fromkeys(_text(name, source) for name in names))
    return distinct if len(distinct) > 1 else None


# --- Ruby ---------------------------------------------------------------------

_RUBY = """
(module name: (_) @name) @definition.module
(class name: (_) @name) @definition.class
(method name: (_) @name) @definition.function
(singleton_method object: (_) @object name: (_) @name) @definition.method
(assignment left: (constant) @name) @definition.constant
"""


def _ruby_names(kind: str, core: tree_sitter.Node, captures: Captures, source: bytes) -> list[Name]:
    if kind == "method" and "object" in captures:
        owner = captures["object"][0]
        name = _text(captures["name"][0], source)
        if owner.type == "self":
            return [((), name, None)]
        prefix, last = _split(_text(owner, source))
        return [((*prefix, last), name, None)]
    if (
        kind == "constant"
        and core.parent is not None
        and core.parent.type
        not in (
            "program",
            "body_statement",
        )
    ):
        return []
    return _dotted_name(kind, core, captures, source)


_COMMENT = frozenset({"comment"})
_LINE_BLOCK = frozenset({"line_comment", "block_comment"})

SPECS: dict[str, Spec] = {
    "python": Spec("python", _PYTHON, _COMMENT, wraps=_python_wraps),
    "javascript": Spec(
        "javascript",
        _JAVASCRIPT + _JAVASCRIPT_ONLY,
        _COMMENT | {"decorator"},
        names=_js_names,
        wraps=_js_wraps,
        leading_siblings=frozenset({"decorator"}),
        eat_semicolon=True,
    ),
    "typescript": Spec(
        "typescript",
        _TYPESCRIPT,
        _COMMENT | {"decorator"},
        names=_js_names,
        wraps=_js_wraps,
        postprocess=_ts_merge_overloads,
        leading_siblings=frozenset({"decorator"}),
        eat_semicolon=True,
    ),
    "tsx": Spec(
        "tsx",
        _TYPESCRIPT,
        _COMMENT | {"decorator"},
        names=_js_names,
        wraps=_js_wraps,
        postprocess=_ts_merge_overloads,
        leading_siblings=frozenset({"decorator"}),
        eat_semicolon=True,
    ),
    "go": Spec("go", _GO, _COMMENT, names=_go_names, wraps=_go_wraps),
    "rust": Spec(
        "rust",
        _RUST,
        _LINE_BLOCK | {"attribute_item"},
        names=_rust_names,
        leading_siblings=frozenset({"attribute_item"}),
    ),
    "java": Spec("java", _JAVA, _LINE_BLOCK, names=_java_names),
    "c": Spec("c", _C, _COMMENT, names=_c_names, wraps=_c_wraps, eat_semicolon=True),
    "cpp": Spec(
        "cpp",
        _CPP,
        _COMMENT,
        names=_c_names,
        wraps=_c_wraps,
        is_method=_cpp_is_method,
        postprocess=_cpp_postprocess,
        eat_semicolon=True,
    ),
    "ruby": Spec(
        "ruby",
        _RUBY,
        _COMMENT,
        names=_ruby_names,
        method_containers=frozenset({"class", "module"}),
    ),
}
