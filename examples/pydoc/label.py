"""Label the pydoc example: questions, quoted evidence and facts -> queries.jsonl, qrels.jsonl.

The questions and their evidence are written below by hand, by reading the topics of
``corpus.jsonl``. Evidence is quoted, not given as offsets: each :class:`Evidence` names the
topics that state it and quotes the passage (white space in the quote matches any run of white
space in the text, and a line break may follow a hyphen, since the topics are wrapped text).
This script finds every quote and checks that

* it occurs exactly once in each topic it names, and in no other topic (a passage that the
  topics repeat verbatim - ``compound`` holds ``try``, ``specialnames`` holds ``customization``
  - is evidence wherever it appears, so every copy is labelled);
* with ``after``, the passage is the first occurrence after a heading-like anchor that occurs
  once in the topic (for sentences that a topic repeats in two sections);
* the spans of one query do not overlap; every required fact has a span of grade 2; an
  unanswerable query has no span of grade above 0.

Offsets are Python string indices (Unicode code points) into the topic text, end exclusive.

Run from any directory:

    python examples/pydoc/label.py          # (re)writes queries.jsonl and qrels.jsonl
    python examples/pydoc/label.py --check  # rebuild into a temp dir, compare, exit 1 on diff
"""

from __future__ import annotations

import itertools
import json
import re
import sys
from collections import Counter
from dataclasses import dataclass
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
from runfiles import PYDOC, jsonl_lines, wants_check, write_or_check

TOPICAL = frozenset({
    "syntax", "datamodel", "exceptions", "operators", "types", "strings", "scoping",
    "functions", "imports", "debugger", "stdlib", "tooling", "releases",
})


@dataclass(frozen=True)
class Evidence:
    """A quoted passage, the topics that state it, and its grade (2 states the fact directly,
    1 partially or as support, 0 plausible but wrong)."""

    topics: tuple[str, ...]
    quote: str
    grade: int = 2
    after: str | None = None


def E(topics: str, quote: str, grade: int = 2, after: str | None = None) -> Evidence:
    """Shorthand: ``topics`` is a space-separated list of topic names."""
    return Evidence(tuple(sorted(topics.split())), quote, grade, after)


@dataclass(frozen=True)
class Query:
    """A question; ``facts`` maps a fact label to its alternative evidence; ``required`` lists
    the facts an answer needs (the others are background); ``wrong`` holds grade-0 evidence."""

    id: str
    text: str
    tags: tuple[str, ...]
    facts: dict[str, tuple[Evidence, ...]]
    required: tuple[str, ...]
    wrong: tuple[Evidence, ...] = ()
    paraphrase_of: str | None = None

    @property
    def answerable(self) -> bool:
        return bool(self.required)


QUERIES: list[Query] = []


def ask(qid: str, text: str, tags: str, facts: dict[str, list[Evidence]],
        background: str = "") -> Query:
    """Add an answerable question; every fact not named in ``background`` is required."""
    optional = set(background.split())
    query = Query(qid, text, tuple(tags.split()),
                  {label: tuple(ev) for label, ev in facts.items()},
                  tuple(label for label in facts if label not in optional))
    QUERIES.append(query)
    return query


def reword(qid: str, text: str, of: Query) -> None:
    """Add a paraphrase of ``of``: the same information need, so the same labels."""
    QUERIES.append(Query(qid, text, of.tags, of.facts, of.required, of.wrong, of.id))


def cannot(qid: str, text: str, tags: str, wrong: list[Evidence] | None = None) -> None:
    """Add an unanswerable question, with optional grade-0 evidence."""
    QUERIES.append(Query(qid, text, tuple(tags.split()), {}, (), tuple(wrong or ())))


# --------------------------------------------------------------------------- the questions

FINALLY_WINS = E("compound try", 'The return value of a function is determined by the last '
                 '"return" statement executed.  Since the "finally" clause always executes, a '
                 '"return" statement executed in the "finally" clause will always be the last '
                 'one executed:')
q = ask("p01", "If both the try block and the finally clause execute a return statement, "
        "which value does the function return?", "exceptions",
        {"f1": [FINALLY_WINS]})
reword("p02", "Does a return inside finally override the value returned from the try body?", q)

ask("p03", "Why can't I use the variable from `except SomeError as e` after the except block "
    "has finished?", "exceptions", {
        "f1": [E("compound try", 'When an exception has been assigned using "as target", it is '
                 'cleared at the end of the "except" clause.')],
        "f2": [E("compound try", 'Exceptions are cleared because with the traceback attached to '
                 'them, they form a reference cycle with the stack frame, keeping all locals in '
                 'that frame alive until the next garbage collection occurs.')],
        "f3": [E("compound try", 'This means the exception must be assigned to a different name '
                 'to be able to refer to it after the "except" clause.', 1)],
    }, background="f3")

q = ask("p04", "When does the else clause of a for loop run?", "syntax", {
    "f1": [E("compound for", 'When the iterator is exhausted, the suite in the "else" clause, if '
             'present, is executed, and the loop terminates.')],
    "f2": [E("break", 'It terminates the nearest enclosing loop, skipping the optional "else" '
             'clause if the loop has one.'),
           E("compound for", 'A "break" statement executed in the first suite terminates the '
             'loop without executing the "else" clause’s suite.',
             after='The "for" statement is used to iterate')],
})
reword("p05", "In a for ... else construct, what makes the else part execute or get skipped?", q)

q = ask("p06", "Why does a function whose default argument is [] keep the items appended in "
        "earlier calls?", "functions", {
            "f1": [E("compound function", '**Default parameter values are evaluated from left to '
                     'right when the function definition is executed.** This means that the '
                     'expression is evaluated once, when the function is defined, and that the '
                     'same “pre-computed” value is used for each call.'),
                   E("calls", '(Default values are calculated, once, when the function is '
                     'defined; thus, a mutable object such as a list or dictionary used as '
                     'default value will be shared by all calls that don’t specify an argument '
                     'value for the corresponding slot; this should usually be avoided.)')],
            "f2": [E("compound function", 'A way around this is to use "None" as the default, '
                     'and explicitly test for it in the body of the function, e.g.:', 1)],
        }, background="f2")
reword("p07", "My function's default empty list accumulates values across calls. What is going "
       "on?", q)

q = ask("p08", "Is `a < b < c` the same as `a < b and b < c`?", "operators", {
    "f1": [E("comparisons", 'Comparisons can be chained arbitrarily, e.g., "x < y <= z" is '
             'equivalent to "x < y and y <= z", except that "y" is evaluated only once (but in '
             'both cases "z" is not evaluated at all when "x < y" is found to be false).'),
           E("operator-summary", 'Note that comparisons, membership tests, and identity tests, '
             'all have the same precedence and have a left-to-right chaining feature as '
             'described in the Comparisons section.', 1)],
})
reword("p09", "How does Python evaluate a range check written as 0 <= x < 10?", q)

ask("p10", "What does // return when one operand is negative, and which sign does the result "
    "of % take?", "operators", {
        "f1": [E("binary", 'Division of integers yields a float, while floor division of '
                 'integers results in an integer; the result is that of mathematical division '
                 'with the ‘floor’ function applied to the result.')],
        "f2": [E("binary", 'The modulo operator always yields a result with the same sign as its '
                 'second operand (or zero); the absolute value of the result is strictly smaller '
                 'than the absolute value of the second operand [1].')],
        "f3": [E("binary", 'The floor division and modulo operators are connected by the '
                 'following identity: "x == (x//y)*y + (x%y)".', 1)],
    }, background="f3")

ask("p11", "Why does -2**2 evaluate to -4 rather than 4?", "operators", {
    "f1": [E("power", 'The power operator binds more tightly than unary operators on its left; '
             'it binds less tightly than unary operators on its right.')],
    "f2": [E("power", 'Thus, in an unparenthesized sequence of power and unary operators, the '
             'operators are evaluated from right to left (this does not constrain the evaluation '
             'order for the operands): "-1**2" results in "-1".', 1)],
}, background="f2")

q = ask("p12", "Which built-in values count as false in an if statement?", "types", {
    "f1": [E("truth", 'Here are most of the built-in objects considered false: * constants '
             'defined to be false: "None" and "False" * zero of any numeric type: "0", "0.0", '
             '"0j", "Decimal(0)", "Fraction(0, 1)" * empty sequences and collections: "\'\'", '
             '"()", "[]", "{}", "set()", "range(0)"'),
           E("booleans", 'In the context of Boolean operations, and also when expressions are '
             'used by control flow statements, the following values are interpreted as false: '
             '"False", "None", numeric zero of all types, and empty strings and containers '
             '(including strings, tuples, lists, dictionaries, sets and frozensets).')],
})
reword("p13", "What objects are falsy in Python?", q)

ask("p14", "Does `x or y` always give True or False?", "operators", {
    "f1": [E("booleans", 'The expression "x or y" first evaluates *x*; if *x* is true, its '
             'value is returned; otherwise, *y* is evaluated and the resulting value is '
             'returned.')],
    "f2": [E("booleans", 'Note that neither "and" nor "or" restrict the value and type they '
             'return to "False" and "True", but rather return the last evaluated argument.'),
           E("truth", '(Important exception: the Boolean operations "or" and "and" always '
             'return one of their operands.)')],
})

q = ask("p15", "What is the difference between `is` and `==`?", "operators", {
    "f1": [E("comparisons", 'The operators "is" and "is not" test for an object’s identity: '
             '"x is y" is true if and only if *x* and *y* are the same object.'),
           E("objects", 'The ‘"is"’ operator compares the identity of two objects; the "id()" '
             'function returns an integer representing its identity.')],
    "f2": [E("comparisons", 'The operators "<", ">", "==", ">=", "<=", and "!=" compare the '
             'values of two objects.')],
})
reword("p16", "How does testing two objects with `is` differ from testing them with `==`?", q)

ask("p17", "Should I compare a value with None using == or is?", "operators", {
    "f1": [E("comparisons", '"None" and "NotImplemented" are singletons.  **PEP 8** advises '
             'that comparisons for singletons should always be done with "is" or "is not", '
             'never the equality operators.')],
    "f2": [E("bltin-null-object", 'There is exactly one null object, named "None" (a built-in '
             'name).', 1)],
}, background="f2")

EQ_KILLS_HASH = E("customization specialnames", 'A class that overrides "__eq__()" and does not '
                  'define "__hash__()" will have its "__hash__()" implicitly set to "None".')
q = ask("p18", "If my class defines __eq__, why do its instances become unhashable?",
        "datamodel", {
            "f1": [EQ_KILLS_HASH],
            "f2": [E("customization specialnames", 'When the "__hash__()" method of a class is '
                     '"None", instances of the class will raise an appropriate "TypeError" when a '
                     'program attempts to retrieve their hash value, and will also be correctly '
                     'identified as unhashable when checking "isinstance(obj, '
                     'collections.abc.Hashable)".')],
            "f3": [E("customization specialnames", 'If a class that overrides "__eq__()" needs '
                     'to retain the implementation of "__hash__()" from a parent class, the '
                     'interpreter must be told this explicitly by setting "__hash__ = '
                     '<ParentClass>.__hash__".', 1)],
        }, background="f3")
reword("p19", "After I added an equality method to my class, hash() on its objects raises "
       "TypeError. Why?", q)

ask("p20", "Can objects of a class that defines __eq__ but not __hash__ be used as dictionary "
    "keys?", "datamodel types", {
        "f1": [EQ_KILLS_HASH,
               E("customization specialnames", 'If a class does not define an "__eq__()" method '
                 'it should not define a "__hash__()" operation either; if it defines "__eq__()" '
                 'but not "__hash__()", its instances will not be usable as items in hashable '
                 'collections.')],
        "f2": [E("typesmapping", 'Values that are not *hashable*, that is, values containing '
                 'lists, dictionaries or other mutable types (that are compared by value rather '
                 'than by object identity) may not be used as keys.'),
               E("types", 'The only types of values not acceptable as keys are values containing '
                 'lists or dictionaries or other mutable types that are compared by value rather '
                 'than by object identity, the reason being that the efficient implementation of '
                 'dictionaries requires a key’s hash value to remain constant.')],
    })

ask("p21", "How does Python decide whether an instance of my own class is true or false?",
    "datamodel", {
        "f1": [E("customization specialnames", 'Called to implement truth value testing and the '
                 'built-in operation "bool()"; should return "False" or "True".  When this method '
                 'is not defined, "__len__()" is called, if it is defined, and the object is '
                 'considered true if its result is nonzero.')],
        "f2": [E("customization specialnames", 'If a class defines neither "__len__()" nor '
                 '"__bool__()", all its instances are considered true.'),
               E("truth", 'By default, an object is considered true unless its class defines '
                 'either a "__bool__()" method that returns "False" or a "__len__()" method that '
                 'returns zero, when called with the object.')],
    })

ask("p22", "What is the difference between __repr__ and __str__?", "datamodel", {
    "f1": [E("customization specialnames", 'Called by the "repr()" built-in function to compute '
             'the “official” string representation of an object.')],
    "f2": [E("customization specialnames", 'Called by "str(object)" and the built-in functions '
             '"format()" and "print()" to compute the “informal” or nicely printable string '
             'representation of an object.')],
    "f3": [E("customization specialnames", 'If a class defines "__repr__()" but not "__str__()", '
             'then "__repr__()" is also used when an “informal” string representation of '
             'instances of that class is required.', 1)],
}, background="f3")

ask("p23", "When is __getattr__ called, and how does that differ from __getattribute__?",
    "datamodel", {
        "f1": [E("attribute-access specialnames", 'Called when the default attribute access '
                 'fails with an "AttributeError" (either "__getattribute__()" raises an '
                 '"AttributeError" because *name* is not an instance attribute or an attribute '
                 'in the class tree for "self"; or "__get__()" of a *name* property raises '
                 '"AttributeError").')],
        "f2": [E("attribute-access specialnames", 'Called unconditionally to implement attribute '
                 'accesses for instances of the class. If the class also defines '
                 '"__getattr__()", the latter will not be called unless "__getattribute__()" '
                 'either calls it explicitly or raises an "AttributeError".')],
    })

DATA_WINS = E("attribute-access specialnames", 'Data descriptors with "__get__()" and '
              '"__set__()" (and/or "__delete__()") defined always override a redefinition in an '
              'instance dictionary.  In contrast, non-data descriptors can be overridden by '
              'instances.')
ask("p24", "What makes a descriptor a data descriptor rather than a non-data descriptor, and "
    "which kind can an instance attribute override?", "datamodel", {
        "f1": [E("attribute-access specialnames", 'If the descriptor defines "__set__()" and/or '
                 '"__delete__()", it is a data descriptor; if it defines neither, it is a '
                 'non-data descriptor.')],
        "f2": [DATA_WINS],
    })

ask("p25", "Why can I shadow a method by assigning an instance attribute of the same name, but "
    "not a property?", "datamodel", {
        "f1": [E("attribute-access specialnames", 'Python methods (including those decorated '
                 'with "@staticmethod" and "@classmethod") are implemented as non-data '
                 'descriptors.  Accordingly, instances can redefine and override methods.')],
        "f2": [E("attribute-access specialnames", 'The "property()" function is implemented as a '
                 'data descriptor. Accordingly, instances cannot override the behavior of a '
                 'property.')],
        "f3": [DATA_WINS],
    })

ask("p26", "What does defining __slots__ change for the instances of a class?", "datamodel", {
    "f1": [E("attribute-access specialnames", '*__slots__* allow us to explicitly declare data '
             'members (like properties) and deny the creation of "__dict__" and *__weakref__* '
             '(unless explicitly declared in *__slots__* or available in a parent.)'),
           E("attribute-access specialnames", '*__slots__* reserves space for the declared '
             'variables and prevents the automatic creation of "__dict__" and *__weakref__* for '
             'each instance.')],
    "f2": [E("attribute-access specialnames", 'Without a "__dict__" variable, instances cannot be '
             'assigned new variables not listed in the *__slots__* definition.  Attempts to '
             'assign to an unlisted variable name raises "AttributeError".')],
})

NO_GLOBAL_NO_ASSIGN = E("global", 'It would be impossible to assign to a global variable '
                        'without "global", although free variables may refer to globals without '
                        'being declared global.')
GLOBAL_REFERS = E("execmodel naming", 'If the "global" statement occurs within a block, all uses '
                  'of the names specified in the statement refer to the bindings of those names '
                  'in the top-level namespace.')
ask("p27", "How can a function assign to a module-level variable?", "scoping", {
    "f1": [E("global", 'It means that the listed identifiers are to be interpreted as globals.  '
             'It would be impossible to assign to a global variable without "global", although '
             'free variables may refer to globals without being declared global.'),
           GLOBAL_REFERS],
})

ask("p28", "What does the nonlocal statement do?", "scoping", {
    "f1": [E("nonlocal", 'The "nonlocal" statement causes the listed identifiers to refer to '
             'previously bound variables in the nearest enclosing scope excluding globals.'),
           E("execmodel naming", 'The "nonlocal" statement causes corresponding names to refer '
             'to previously bound variables in the nearest enclosing function scope.')],
})

ask("p29", "Why do I get UnboundLocalError when a function reads a global variable and later "
    "assigns to it, and how do I fix it?", "scoping exceptions", {
        "f1": [E("execmodel naming", 'If a name binding operation occurs anywhere within a code '
                 'block, all uses of the name within the block are treated as references to the '
                 'current block.  This can lead to errors when a name is used within a block '
                 'before it is bound.')],
        "f2": [E("execmodel naming", 'If the current scope is a function scope, and the name '
                 'refers to a local variable that has not yet been bound to a value at the point '
                 'where the name is used, an "UnboundLocalError" exception is raised.')],
        "f3": [GLOBAL_REFERS, NO_GLOBAL_NO_ASSIGN],
    })

CLASS_SCOPE = E("execmodel naming", 'The scope of names defined in a class block is limited to '
                'the class block; it does not extend to the code blocks of methods – this '
                'includes comprehensions and generator expressions since they are implemented '
                'using a function scope.')
ask("p30", "Why can't a generator expression in a class body see the other class variables?",
    "scoping", {
        "f1": [CLASS_SCOPE,
               E("specialnames", 'However, even when the class definition occurs inside the '
                 'function, methods defined inside the class still cannot see names defined at '
                 'the class scope.', 1)],
    })

ask("p31", "Inside a method, why can't I refer to a class attribute by its bare name?",
    "scoping datamodel", {
        "f1": [E("specialnames", 'However, even when the class definition occurs inside the '
                 'function, methods defined inside the class still cannot see names defined at '
                 'the class scope. Class variables must be accessed through the first parameter '
                 'of instance or class methods, or through the implicit lexically scoped '
                 '"__class__" reference described in the next section.'),
               CLASS_SCOPE],
    })

q = ask("p32", "Are Python dictionaries ordered?", "types", {
    "f1": [E("typesmapping", 'Dictionaries preserve insertion order.  Note that updating a key '
             'does not affect the order.  Keys added after deletion are inserted at the end.'),
           E("types", 'Dictionaries preserve insertion order, meaning that keys will be produced '
             'in the same order they were added sequentially over the dictionary.')],
    "f2": [E("typesmapping", 'Changed in version 3.7: Dictionary order is guaranteed to be '
             'insertion order.  This behavior was an implementation detail of CPython from 3.6.',
             1),
           E("types", 'Changed in version 3.7: Dictionaries did not preserve insertion order in '
             'versions of Python before 3.6. In CPython 3.6, insertion order was preserved, but '
             'it was considered an implementation detail at that time rather than a language '
             'guarantee.', 1)],
}, background="f2")
reword("p33", "Does a dict remember the order in which its keys were added?", q)

ask("p34", "Can 1 and 1.0 be two separate keys of the same dictionary?", "types", {
    "f1": [E("typesmapping", 'Values that compare equal (such as "1", "1.0", and "True") can be '
             'used interchangeably to index the same dictionary entry.'),
           E("types", 'Numeric types used for keys obey the normal rules for numeric comparison: '
             'if two numbers compare equal (e.g., "1" and "1.0") then they can be used '
             'interchangeably to index the same dictionary entry.')],
})

ask("p35", "How do I merge two dictionaries with an operator, and whose value wins for a key "
    "that is in both?", "types", {
        "f1": [E("typesmapping", 'Create a new dictionary with the merged keys and values of *d* '
                 'and *other*, which must both be dictionaries. The values of *other* take '
                 'priority when *d* and *other* share keys.')],
        "f2": [E("typesmapping", 'Update the dictionary *d* with keys and values from *other*, '
                 'which may be either a *mapping* or an *iterable* of key/value pairs. The values '
                 'of *other* take priority when *d* and *other* share keys.', 1)],
    }, background="f2")

ask("p36", "Is it safe to add or delete dictionary entries while iterating over the "
    "dictionary?", "types", {
        "f1": [E("typesmapping", 'Iterating views while adding or deleting entries in the '
                 'dictionary may raise a "RuntimeError" or fail to iterate over all entries.')],
    })

q = ask("p37", "Why does [[]] * 3 give a list whose three inner lists change together?", "types", {
    "f1": [E("typesseq", 'Note that items in the sequence *s* are not copied; they are '
             'referenced multiple times.')],
    "f2": [E("typesseq", 'What has happened is that "[[]]" is a one-element list containing an '
             'empty list, so all three elements of "[[]] * 3" are references to this single '
             'empty list.')],
    "f3": [E("typesseq", 'You can create a list of different lists this way: >>> lists = [[] for '
             'i in range(3)]', 1)],
}, background="f3")
reword("p38", "I built a grid with [[0] * 3] * 3 and assigning to one row changes every row. "
       "Why?", q)

ask("p39", "Is list.sort() stable?", "types", {
    "f1": [E("typesseq", 'The "sort()" method is guaranteed to be stable.  A sort is stable if '
             'it guarantees not to change the relative order of elements that compare equal — '
             'this is helpful for sorting in multiple passes (for example, sort by department, '
             'then by salary grade).')],
})

ask("p40", "Why does list.sort() return None, and how do I get a new sorted list instead?",
    "types", {
        "f1": [E("typesseq", 'This method modifies the sequence in place for economy of space '
                 'when sorting a large sequence.  To remind users that it operates by side '
                 'effect, it does not return the sorted sequence (use "sorted()" to explicitly '
                 'request a new sorted list instance).')],
    })

ask("p41", "How do I sort a list of records by one field in descending order?", "types", {
    "f1": [E("typesseq", '*key* specifies a function of one argument that is used to extract a '
             'comparison key from each list element (for example, "key=str.lower").')],
    "f2": [E("typesseq", '*reverse* is a boolean value.  If set to "True", then the list elements '
             'are sorted as if each comparison were reversed.')],
})

ask("p42", "What must my class define so that a list of its instances can be sorted with "
    "list.sort()?", "types datamodel", {
        "f1": [E("typesseq", 'This method sorts the list in place, using only "<" comparisons '
                 'between items.')],
        "f2": [E("customization specialnames", 'The correspondence between operator symbols and '
                 'method names is as follows: "x<y" calls "x.__lt__(y)", "x<=y" calls '
                 '"x.__le__(y)", "x==y" calls "x.__eq__(y)", "x!=y" calls "x.__ne__(y)", "x>y" '
                 'calls "x.__gt__(y)", and "x>=y" calls "x.__ge__(y)".')],
        "f3": [E("comparisons", 'A default order comparison ("<", ">", "<=", and ">=") is not '
                 'provided; an attempt raises "TypeError".', 1)],
    }, background="f3")

ask("p43", "How do I write a tuple with a single element?", "types syntax", {
    "f1": [E("typesseq", 'Using a trailing comma for a singleton tuple: "a," or "(a,)"'),
           E("exprlists", 'The trailing comma is required only to create a single tuple (a.k.a. '
             'a *singleton*); it is optional in all other cases.'),
           E("types", 'A tuple of one item (a ‘singleton’) can be formed by affixing a comma to '
             'an expression (an expression by itself does not create a tuple, since parentheses '
             'must be usable for grouping of expressions).')],
    "f2": [E("typesseq", 'Note that it is actually the comma which makes a tuple, not the '
             'parentheses.', 1)],
}, background="f2")

ask("p44", "Why is building a long string with += in a loop slow, and what should I use "
    "instead?", "strings types", {
        "f1": [E("typesseq", 'Concatenating immutable sequences always results in a new object. '
                 'This means that building up a sequence by repeated concatenation will have a '
                 'quadratic runtime cost in the total sequence length.')],
        "f2": [E("typesseq", 'if concatenating "str" objects, you can build a list and use '
                 '"str.join()" at the end or else write to an "io.StringIO" instance and retrieve '
                 'its value when complete')],
    })

ask("p45", "How does str.split() with no arguments treat runs of spaces?", "strings", {
    "f1": [E("string-methods", 'If *sep* is not specified or is "None", a different splitting '
             'algorithm is applied: runs of consecutive whitespace are regarded as a single '
             'separator, and the result will contain no empty strings at the start or end if the '
             'string has leading or trailing whitespace.')],
    "f2": [E("string-methods", 'If *sep* is given, consecutive delimiters are not grouped '
             'together and are deemed to delimit empty strings (for example, "\'1,,2\'.split('
             '\',\')" returns "[\'1\', \'\', \'2\']").', 1)],
}, background="f2")

REMOVEPREFIX_POINTER = E("string-methods", 'See "str.removeprefix()" for a method that will '
                         'remove a single prefix string rather than all of a set of characters.')
q = ask("p46", "Does str.strip('abc') remove the substring 'abc' from both ends?", "strings", {
    "f1": [E("string-methods", 'The *chars* argument is not a prefix or suffix; rather, all '
             'combinations of its values are stripped:')],
    "f2": [E("string-methods", REMOVEPREFIX_POINTER.quote, 1)],
}, background="f2")
reword("p47", "When I pass a string to strip(), is it removed as a whole word or character by "
       "character?", q)

ask("p48", "How do I remove a fixed prefix from a string, and why does lstrip() give a "
    "different result?", "strings", {
        "f1": [REMOVEPREFIX_POINTER,
               E("string-methods", 'If the string starts with the *prefix* string, return '
                 '"string[len(prefix):]". Otherwise, return a copy of the original string:')],
        "f2": [E("string-methods", 'The *chars* argument is not a prefix; rather, all '
                 'combinations of its values are stripped:')],
    })

ask("p49", "Can a raw string literal end with a backslash?", "strings syntax", {
    "f1": [E("strings", 'Specifically, *a raw literal cannot end in a single backslash* (since '
             'the backslash would escape the following quote character).')],
})

ask("p50", "How do I format a number with commas as thousands separators?", "strings", {
    "f1": [E("formatstrings", 'The "\',\'" option signals the use of a comma for a thousands '
             'separator.'),
           E("formatstrings", 'Using the comma as a thousands separator: >>> \'{:,}\'.format('
             '1234567890) \'1,234,567,890\'')],
})

ask("p51", "Can I use underscores in integer literals to group digits?", "syntax types", {
    "f1": [E("integers", 'Underscores are ignored for determining the numeric value of the '
             'literal.  They can be used to group digits for enhanced readability.  One '
             'underscore can occur between digits, and after base specifiers like "0x".')],
    "f2": [E("floating", 'As in integer literals, underscores are supported for digit grouping.',
             1)],
}, background="f2")

q = ask("p52", "Is there a maximum size for Python integers?", "types", {
    "f1": [E("types", 'These represent numbers in an unlimited range, subject to available '
             '(virtual) memory only.'),
           E("integers", 'There is no limit for the length of integer literals apart from what '
             'can be stored in available memory.', 1)],
})
reword("p53", "How large can an int get before it overflows?", q)

ask("p54", "Does Python have single-precision floats?", "types", {
    "f1": [E("types", 'These represent machine-level double precision floating point numbers.')],
    "f2": [E("types", 'Python does not support single-precision floating point numbers; the '
             'savings in processor and memory usage that are usually the reason for using these '
             'are dwarfed by the overhead of using objects in Python, so there is no reason to '
             'complicate the language with two kinds of floating point numbers.')],
})

ask("p55", "Why is float('nan') == float('nan') False?", "operators", {
    "f1": [E("comparisons", 'Any ordered comparison of a number to a not-a-number value is '
             'false. A counter-intuitive implication is that not-a-number values are not equal '
             'to themselves.')],
    "f2": [E("comparisons", 'For example, if "x = float(\'NaN\')", "3 < x", "x < 3" and "x == x" '
             'are all false, while "x != x" is true.  This behavior is compliant with IEEE 754.',
             1)],
}, background="f2")

q = ask("p56", "What does `raise NewError(...) from None` do?", "exceptions", {
    "f1": [E("raise", 'Exception chaining can be explicitly suppressed by specifying "None" in '
             'the "from" clause:')],
})
reword("p57", "How do I raise a new exception inside an except block without the traceback "
       "saying that it happened during handling of the original one?", q)

ask("p58", "What is the difference between an exception's __cause__ and its __context__?",
    "exceptions", {
        "f1": [E("raise", 'The "from" clause is used for exception chaining: if given, the second '
                 '*expression* must be another exception class or instance. If the second '
                 'expression is an exception instance, it will be attached to the raised '
                 'exception as the "__cause__" attribute (which is writable).')],
        "f2": [E("raise", 'A similar mechanism works implicitly if a new exception is raised when '
                 'an exception is already being handled.  An exception may be handled when an '
                 '"except" or "finally" clause, or a "with" statement, is used. The previous '
                 'exception is then attached as the new exception’s "__context__" attribute:')],
    })

q = ask("p59", "What does a bare `raise` statement with no expression do?", "exceptions", {
    "f1": [E("raise", 'If no expressions are present, "raise" re-raises the exception that is '
             'currently being handled, which is also known as the *active exception*.')],
    "f2": [E("raise", 'If there isn’t currently an active exception, a "RuntimeError" exception '
             'is raised indicating that this is an error.')],
})
reword("p60", "What happens when `raise` is written on its own, without an exception after it?",
       q)

ask("p61", "Are assert statements executed when Python runs with -O?", "exceptions", {
    "f1": [E("assert", 'In the current implementation, the built-in variable "__debug__" is '
             '"True" under normal circumstances, "False" when optimization is requested (command '
             'line option "-O").  The current code generator emits no code for an assert '
             'statement when optimization is requested at compile time.')],
    "f2": [E("assert", 'The simple form, "assert expression", is equivalent to if __debug__: if '
             'not expression: raise AssertionError', 1)],
}, background="f2")

ask("p62", "What happens when an exception is never caught?", "exceptions", {
    "f1": [E("exceptions execmodel", 'When an exception is not handled at all, the interpreter '
             'terminates execution of the program, or returns to its interactive main loop.  In '
             'either case, it prints a stack traceback, except when the exception is '
             '"SystemExit".')],
})

ask("p63", "How can a with statement swallow an exception raised inside its block?",
    "exceptions syntax", {
        "f1": [E("compound with", 'If the suite was exited due to an exception, and the return '
                 'value from the "__exit__()" method was false, the exception is reraised. If the '
                 'return value was true, the exception is suppressed, and execution continues '
                 'with the statement following the "with" statement.')],
        "f2": [E("context-managers specialnames", 'If an exception is supplied, and the method '
                 'wishes to suppress the exception (i.e., prevent it from being propagated), it '
                 'should return a true value.')],
    })

ask("p64", "Which methods does an object need so that it can be used in a with statement?",
    "datamodel", {
        "f1": [E("context-managers specialnames", 'Enter the runtime context related to this '
                 'object. The "with" statement will bind this method’s return value to the '
                 'target(s) specified in the "as" clause of the statement, if any.')],
        "f2": [E("context-managers specialnames", 'Exit the runtime context related to this '
                 'object. The parameters describe the exception that caused the context to be '
                 'exited. If the context was exited without an exception, all three arguments '
                 'will be "None".')],
    })

ask("p65", "Why should I open files in a with statement rather than rely on the file being "
    "closed when it is garbage-collected?", "syntax datamodel", {
        "f1": [E("compound with", 'The "with" statement guarantees that if the "__enter__()" '
                 'method returns without an error, then "__exit__()" will always be called.')],
        "f2": [E("objects", 'Do not depend on immediate finalization of objects when they become '
                 'unreachable (so you should always close files explicitly).')],
        "f3": [E("objects", 'The ‘"try"…"finally"’ statement and the ‘"with"’ statement provide '
                 'convenient ways to do this.', 1)],
    }, background="f3")

ask("p66", "How do I make function parameters keyword-only or positional-only?", "functions", {
    "f1": [E("compound function", 'Parameters after “"*"” or “"*identifier"” are keyword-only '
             'parameters and may only be passed by keyword arguments.')],
    "f2": [E("compound function", 'Parameters before “"/"” are positional-only parameters and '
             'may only be passed by positional arguments.')],
})

ask("p67", "What does stacking two decorators on a function expand to?", "functions", {
    "f1": [E("compound function", 'Multiple decorators are applied in nested fashion. For '
             'example, the following code @f1(arg) @f2 def func(): pass is roughly equivalent to '
             'def func(): pass func = f1(arg)(f2(func))')],
})

ask("p68", "Can a lambda contain statements?", "functions", {
    "f1": [E("lambda", 'Note that functions created with lambda expressions cannot contain '
             'statements or annotations.'),
           E("compound function", 'The “"def"” form is actually more powerful since it allows '
             'the execution of multiple statements and annotations.', 1)],
})

ask("p69", "What happens to the value of a return statement inside a generator?", "functions", {
    "f1": [E("return", 'In a generator function, the "return" statement indicates that the '
             'generator is done and will cause "StopIteration" to be raised. The returned value '
             '(if any) is used as an argument to construct "StopIteration" and becomes the '
             '"StopIteration.value" attribute.'),
           E("types", 'When the function executes a "return" statement or falls off the end, a '
             '"StopIteration" exception is raised and the iterator will have reached the end of '
             'the set of values to be returned.', 1)],
})

ask("p70", "Which names does `from module import *` bring in?", "imports", {
    "f1": [E("import", 'The *public names* defined by a module are determined by checking the '
             'module’s namespace for a variable named "__all__"; if defined, it must be a '
             'sequence of strings which are names defined or imported by that module.')],
    "f2": [E("import", 'If "__all__" is not defined, the set of public names includes all names '
             'found in the module’s namespace which do not begin with an underscore character '
             '("\'_\'").'),
           E("execmodel naming", 'The "import" statement of the form "from ... import *" binds '
             'all names defined in the imported module, except those beginning with an '
             'underscore.'),
           E("id-classes identifiers", '"_*" Not imported by "from module import *".', 1)],
})

ask("p71", "Can I use `from module import *` inside a function?", "imports", {
    "f1": [E("import", 'The wild card form of import — "from module import *" — is only allowed '
             'at the module level.  Attempting to use it in class or function definitions will '
             'raise a "SyntaxError".'),
           E("execmodel naming", 'This form may only be used at the module level.', 1)],
})

ask("p72", "Why does assigning __len__ on an instance not make len() work on that instance?",
    "datamodel", {
        "f1": [E("specialnames", 'For custom classes, implicit invocations of special methods '
                 'are only guaranteed to work correctly if defined on an object’s type, not in '
                 'the object’s instance dictionary.')],
    })

ask("p73", "How does the in operator work on a class that does not define __contains__?",
    "datamodel operators", {
        "f1": [E("comparisons in", 'For user-defined classes which do not define '
                 '"__contains__()" but do define "__iter__()", "x in y" is "True" if some value '
                 '"z", for which the expression "x is z or x == z" is true, is produced while '
                 'iterating over "y".')],
        "f2": [E("comparisons in", 'Lastly, the old-style iteration protocol is tried: if a class '
                 'defines "__getitem__()", "x in y" is "True" if and only if there is a '
                 'non-negative integer index *i* such that "x is y[i] or x == y[i]", and no '
                 'lower integer index raises the "IndexError" exception.')],
    })

ask("p74", "When does Python call __radd__ instead of __add__?", "datamodel operators", {
    "f1": [E("numeric-types specialnames", 'These functions are only called if the left operand '
             'does not support the corresponding operation [3] and the operands are of different '
             'types. [4]')],
    "f2": [E("numeric-types specialnames", 'If one of those methods does not support the '
             'operation with the supplied arguments, it should return "NotImplemented".')],
})

ask("p75", "Is `x += 1` exactly the same as `x = x + 1`?", "syntax operators", {
    "f1": [E("assignment augassign", 'An augmented assignment expression like "x += 1" can be '
             'rewritten as "x = x + 1" to achieve a similar, but not exactly equal effect. In the '
             'augmented version, "x" is only evaluated once. Also, when possible, the actual '
             'operation is performed *in-place*, meaning that rather than creating a new object '
             'and assigning that to the target, the old object is modified instead.')],
})

ask("p76", "When unpacking a sequence into variables, how do I collect the remaining items into "
    "a list?", "syntax", {
        "f1": [E("assignment", 'A list of the remaining items in the iterable is then assigned '
                 'to the starred target (the list can be empty).')],
        "f2": [E("assignment", 'If the target list contains one target prefixed with an '
                 'asterisk, called a “starred” target: The object must be an iterable with at '
                 'least as many items as there are targets in the target list, minus one.', 1)],
    }, background="f2")

ask("p77", "What does `case _:` match in a match statement?", "syntax", {
    "f1": [E("compound", 'A wildcard pattern always succeeds (matches anything) and binds no '
             'name.'),
           E("id-classes identifiers", 'In a "case" pattern within a "match" statement, "_" is a '
             'soft keyword that denotes a wildcard.')],
})

ask("p78", "For a dictionary d, what does `x in d` test, and which method should my own "
    "mapping class define to support `in`?", "types datamodel", {
        "f1": [E("comparisons in", 'All built-in sequences and set types support this as well as '
                 'dictionary, for which "in" tests whether the dictionary has a given key.'),
               E("typesmapping", 'Return "True" if *d* has a key *key*, else "False".')],
        "f2": [E("sequence-types specialnames", 'Called to implement membership test operators.  '
                 'Should return true if *item* is in *self*, false otherwise.  For mapping '
                 'objects, this should consider the keys of the mapping rather than the values or '
                 'the key-item pairs.')],
    })

ask("p79", "Do variables bound in a case pattern still exist after the match statement?",
    "syntax", {
        "f1": [E("compound", '**Name bindings made during a successful pattern match outlive the '
                 'executed block and can be used after the match statement**.')],
        "f2": [E("compound", 'During failed pattern matches, some subpatterns may succeed.  Do '
                 'not rely on bindings being made for a failed match.', 1)],
    }, background="f2")

ask("p80", "Does a sequence pattern in a match statement match a string?", "syntax", {
    "f1": [E("compound", 'If the subject value is an instance of "str", "bytes" or "bytearray" '
             'the sequence pattern fails.'),
           E("async compound", 'Subject values of type "str", "bytes", and "bytearray" do not '
             'match sequence patterns.')],
})

ask("p81", "Are match and case reserved keywords?", "syntax", {
    "f1": [E("compound", 'The "match" and "case" keywords are soft keywords.'),
           E("identifiers", 'The identifiers "match", "case" and "_" can syntactically act as '
             'keywords in contexts related to the pattern matching statement, but this '
             'distinction is done at the parser level, not when tokenizing.')],
})

ask("p82", "How do I stop my program in the debugger at a specific line?", "debugger", {
    "f1": [E("debugger", 'The typical usage to break into the debugger is to insert: import pdb; '
             'pdb.set_trace() Or: breakpoint() at the location you want to break into the '
             'debugger, and then run the program.')],
    "f2": [E("debugger", 'New in version 3.7: The built-in "breakpoint()", when called with '
             'defaults, can be used instead of "import pdb; pdb.set_trace()".', 1)],
}, background="f2")

ask("p83", "How do I set a conditional breakpoint in pdb?", "debugger", {
    "f1": [E("debugger", 'If a second argument is present, it is an expression which must '
             'evaluate to true before the breakpoint is honored.'),
           E("debugger", 'Set a new *condition* for the breakpoint, an expression which must '
             'evaluate to true before the breakpoint is honored.')],
})

ask("p84", "What is the difference between the step and next commands in pdb?", "debugger", {
    "f1": [E("debugger", '(The difference between "next" and "step" is that "step" stops inside '
             'a called function, while "next" executes called functions at (nearly) full speed, '
             'only stopping at the next line in the current function.)')],
})

ask("p85", "How do I inspect a script in the debugger after it has crashed with an exception?",
    "debugger", {
        "f1": [E("debugger", 'When invoked as a module, pdb will automatically enter post-mortem '
                 'debugging if the program being debugged exits abnormally.'),
               E("debugger", 'Enter post-mortem debugging of the traceback found in '
                 '"sys.last_traceback".')],
    })

ask("p86", "How can a class run code automatically whenever it is subclassed?", "datamodel", {
    "f1": [E("specialnames", 'Whenever a class inherits from another class, '
             '"__init_subclass__()" is called on the parent class.'),
           E("specialnames", 'This method is called whenever the containing class is '
             'subclassed. *cls* is then the new subclass.')],
})

ask("p87", "Does `del x` call x.__del__()?", "datamodel", {
    "f1": [E("customization specialnames", '"del x" doesn’t directly call "x.__del__()" — the '
             'former decrements the reference count for "x" by one, and the latter is only '
             'called when "x"’s reference count reaches zero.')],
    "f2": [E("del", 'Deletion of a name removes the binding of that name from the local or '
             'global namespace, depending on whether the name occurs in a "global" statement in '
             'the same code block.')],
})

ask("p88", "What does a function return if it has no return statement?", "functions", {
    "f1": [E("bltin-null-object", 'This object is returned by functions that don’t explicitly '
             'return a value.'),
           E("types", 'It is used to signify the absence of a value in many situations, e.g., it '
             'is returned from functions that don’t explicitly return anything.'),
           E("return", 'If an expression list is present, it is evaluated, else "None" is '
             'substituted.', 1)],
})

ask("p89", "How does name mangling of attributes that start with two underscores work?",
    "datamodel", {
        "f1": [E("atom-identifiers", 'Private names are transformed to a longer form before code '
                 'is generated for them.  The transformation inserts the class name, with leading '
                 'underscores removed and a single underscore inserted, in front of the name.  '
                 'For example, the identifier "__spam" occurring in a class named "Ham" will be '
                 'transformed to "_Ham__spam".')],
    })

cannot("p90", "How do I send an HTTP POST request with the http.client module?", "stdlib")
cannot("p91", "How do I parse a JSON string into a Python dictionary?", "stdlib", [
    E("typesmapping", 'Return a new dictionary initialized from an optional positional argument '
      'and a possibly empty set of keyword arguments.', 0)])
cannot("p92", "What new syntax does Python 3.13 add to the language?", "releases", [
    E("string-methods", 'The casefolding algorithm is described in section 3.13 of the Unicode '
      'Standard.', 0),
    E("string-methods", 'The lowercasing algorithm used is described in section 3.13 of the '
      'Unicode Standard.', 0),
    E("string-methods", 'The uppercasing algorithm used is described in section 3.13 of the '
      'Unicode Standard.', 0)])
cannot("p93", "How do I create and activate a virtual environment with venv?", "tooling")
cannot("p94", "How do I run several coroutines concurrently with asyncio.gather?", "stdlib", [
    E("async compound", 'Execution of Python coroutines can be suspended and resumed at many '
      'points (see *coroutine*).', 0)])
cannot("p95", "How do I change the thresholds of the generational garbage collector?", "stdlib", [
    E("objects", 'See the documentation of the "gc" module for information on controlling the '
      'collection of cyclic garbage.', 0)])
cannot("p96", "What is the default recursion limit, and how do I raise it?", "stdlib", [
    E("attribute-access specialnames", 'In order to avoid infinite recursion in this method, its '
      'implementation should always call the base class method with the same name to access any '
      'attributes it needs, for example, "object.__getattribute__(self, name)".', 0)])
cannot("p97", "Which regular expression matches a valid email address?", "stdlib", [
    E("string-methods", 'Alternatively, a workaround for apostrophes can be constructed using '
      'regular expressions:', 0)])
cannot("p98", "What is the average time complexity of looking up a key in a dict?", "types", [
    E("customization specialnames", 'This is intended to provide protection against a '
      'denial-of-service caused by carefully chosen inputs that exploit the worst case '
      'performance of a dict insertion, O(n^2) complexity.', 0)])
cannot("p99", "In which release will the global interpreter lock be removed?", "releases")


# --------------------------------------------------------------------------- locating quotes

class LabelError(Exception):
    """A quote that is missing, ambiguous, or labelled in the wrong topics; overlapping spans."""


def pattern(quote: str) -> re.Pattern[str]:
    """The quote as a pattern: white space matches any white space run, a hyphen may be
    followed by a line break (the topics are wrapped at hyphens)."""
    words = [re.escape(word).replace(r"\-", r"\-\s*") for word in quote.split()]
    return re.compile(r"\s+".join(words))


def locate(ev: Evidence, corpus: dict[str, str]) -> list[tuple[str, int, int]]:
    """``(topic, start, end)`` of ``ev`` in every topic that states it."""
    found: dict[str, tuple[int, int]] = {}
    quote = pattern(ev.quote)
    for topic, text in corpus.items():
        if ev.after is None:
            hits = [m.span() for m in quote.finditer(text)]
            if len(hits) > 1:
                raise LabelError(f"{topic}: {ev.quote[:60]!r} occurs {len(hits)} times")
        else:
            anchors = [m.end() for m in pattern(ev.after).finditer(text)]
            if len(anchors) > 1:
                raise LabelError(f"{topic}: anchor {ev.after!r} occurs {len(anchors)} times")
            hit = quote.search(text, anchors[0]) if anchors else None
            hits = [hit.span()] if hit else []
        if hits:
            found[topic] = hits[0]
    if tuple(sorted(found)) != ev.topics:
        raise LabelError(f"{ev.quote[:60]!r}: labelled in {list(ev.topics)}, "
                         f"found in {sorted(found)}")
    return [(topic, *found[topic]) for topic in ev.topics]


def judgments(query: Query, corpus: dict[str, str]) -> list[dict[str, object]]:
    """The query's span judgments, sorted by topic and start; checks the rules of the module
    docstring."""
    rows: list[dict[str, object]] = []
    for label, alternatives in query.facts.items():
        for ev in alternatives:
            rows += [{"query_id": query.id, "doc_id": topic, "start": start, "end": end,
                      "grade": ev.grade, "fact": label}
                     for topic, start, end in locate(ev, corpus)]
    for ev in query.wrong:
        if ev.grade != 0:
            raise LabelError(f"{query.id}: wrong evidence must have grade 0")
        rows += [{"query_id": query.id, "doc_id": topic, "start": start, "end": end, "grade": 0}
                 for topic, start, end in locate(ev, corpus)]
    rows.sort(key=lambda r: (r["doc_id"], r["start"]))
    for before, after in itertools.pairwise(rows):
        if before["doc_id"] == after["doc_id"] and after["start"] < before["end"]:
            raise LabelError(f"{query.id}: spans overlap in {after['doc_id']} at {after['start']}")
    for label in query.required:
        if not any(ev.grade == 2 for ev in query.facts[label]):
            raise LabelError(f"{query.id}: required fact {label} has no grade-2 span")
    return rows


def tags(query: Query) -> list[str]:
    """Topical tags, then the derived ones: multi-fact (two or more required facts),
    paraphrase, unanswerable."""
    if not query.tags or not set(query.tags) <= TOPICAL:
        raise LabelError(f"{query.id}: topical tags {query.tags} not in {sorted(TOPICAL)}")
    derived = [("multi-fact", len(query.required) >= 2),
               ("paraphrase", query.paraphrase_of is not None),
               ("unanswerable", not query.answerable)]
    return [*query.tags, *(tag for tag, holds in derived if holds)]


def query_row(query: Query) -> dict[str, object]:
    """One line of queries.jsonl; ``facts`` (the required ones) only for answerable queries."""
    row: dict[str, object] = {"id": query.id, "text": query.text, "tags": tags(query),
                              "answerable": query.answerable}
    if query.answerable:
        row["facts"] = list(query.required)
    return row


def summary(queries: list[dict[str, object]], qrels: list[dict[str, object]]) -> str:
    """Counts for the README: queries by tag, spans by grade, facts and their alternatives
    (a fact with two or more spans; worded differently when two of its quotes differ)."""
    by_tag = Counter(tag for q in queries for tag in q["tags"])  # type: ignore[attr-defined]
    by_grade = Counter(r["grade"] for r in qrels)
    spans = Counter((r["query_id"], r["fact"]) for r in qrels if "fact" in r)
    topics = {key: {r["doc_id"] for r in qrels if (r["query_id"], r.get("fact")) == key}
              for key in spans}
    apart = sum(
        not set.intersection(*({r["doc_id"] for r in qrels if (r["query_id"], r.get("fact"))
                                 == (q.id, label)} for label in q.required))
        for q in QUERIES if len(q.required) > 1)
    worded = sum(len({ev.quote for ev in evs}) > 1 for q in QUERIES for evs in q.facts.values())
    required = sum(len(q.required) for q in QUERIES)
    return "\n".join([
        f"queries {len(queries)}, answerable {sum(q.answerable for q in QUERIES)}",
        "tags " + ", ".join(f"{tag} {n}" for tag, n in sorted(by_tag.items())),
        f"multi-fact queries whose required facts no single topic holds: {apart}",
        (f"spans {len(qrels)} in {len({r['doc_id'] for r in qrels})} topics: grade 2 "
         f"{by_grade[2]}, grade 1 {by_grade[1]}, grade 0 {by_grade[0]}"),
        (f"facts {len(spans)} (required {required}, background {len(spans) - required}); "
         f"with alternative spans {sum(n > 1 for n in spans.values())}, in two or more topics "
         f"{sum(len(t) > 1 for t in topics.values())}, worded differently {worded}"),
    ])


def main(argv: list[str] | None = None) -> int:
    """Command-line entry point; returns the exit code."""
    check = wants_check(__doc__.splitlines()[0], argv)
    with (PYDOC / "corpus.jsonl").open(encoding="utf-8") as fh:
        corpus = {row["id"]: row["text"] for row in map(json.loads, fh)}
    try:
        if len({q.id for q in QUERIES}) != len(QUERIES):
            raise LabelError("duplicate query ids")
        queries = [query_row(q) for q in QUERIES]
        qrels = [row for q in QUERIES for row in judgments(q, corpus)]
    except LabelError as exc:
        print(f"error: label.py: {exc} — fix the quote or its topics", file=sys.stderr)
        return 2
    same = write_or_check(PYDOC / "queries.jsonl", jsonl_lines(queries), check)
    same &= write_or_check(PYDOC / "qrels.jsonl", jsonl_lines(qrels), check)
    print(summary(queries, qrels))
    return 0 if same else 1


if __name__ == "__main__":
    sys.exit(main())
