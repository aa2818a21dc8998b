#!/usr/bin/env python3
"""Checks that data flows one way through the folders (README.md, "Layout").

    recorder -> import -> index -> analysis -> render -> app

A stage's files may include its own headers and the public headers
(STAGE/include/tinescope/...) of the stages before it, never those of a later
stage, and never another folder's private headers (STAGE/src/...), by name or
by a relative path; a public header includes no private one of its own stage.
Comments and `#if 0` blocks are not read. A stage's CMakeLists.txt links only
targets of its own stage and earlier ones (by name: a ${VARIABLE} is not read).
tests/ and bench/ may include any stage's public headers; their white-box
tests reach the private headers that their CMakeLists.txt names.

Usage: check_layout.py [ROOT]      exit 1, and every violation printed, if any
       check_layout.py --self-test  shows that each kind of violation is found
"""
import os
import re
import sys
import tempfile

STAGES = ["recorder", "import", "index", "analysis", "render", "app"]
# Public headers: tinescope/<stage>/x.hpp; the recorder's are tinescope/x.h(pp).
TARGETS = {
    "tinescope_format": "recorder", "tinescope_recorder": "recorder", "tinescope_reader": "recorder",
    "tinescope_import": "import", "tinescope_index": "index", "tinescope_index_pgo": "index",
    "tinescope_analysis": "analysis", "tinescope_render": "render",
    "tinescope_viewer": "app", "tinescope_cli": "app",
}
SOURCE = re.compile(r"\.(c|cc|cpp|cxx|h|hh|hpp|hxx|inl|ipp)$")
INCLUDE = re.compile(r'^\s*#\s*include\s*[<"]([^">]+)[">]', re.M)
LINK = re.compile(r"target_link_libraries\s*\(([^)]*)\)", re.S)


def stage_of_public(header):
    parts = header.split("/")
    if parts[0] != "tinescope":
        return None
    if len(parts) == 2:
        return "recorder"
    return parts[1] if parts[1] in STAGES else "unknown"


def private_headers(root):
    """basename -> the stages whose src/ (or other non-include folders) hold it."""
    out = {}
    for stage in STAGES:
        top = os.path.join(root, stage)
        for d, _, files in os.walk(top):
            if os.path.relpath(d, top).split(os.sep)[0] == "include":
                continue
            for f in files:
                if f.endswith((".h", ".hpp")):
                    out.setdefault(f, set()).add(stage)
    return out


def check(root):
    problems = []
    private = private_headers(root)
    for folder in STAGES + ["tests", "bench"]:
        top = os.path.join(root, folder)
        for d, _, files in os.walk(top):
            for f in sorted(files):
                path = os.path.join(d, f)
                rel = os.path.relpath(path, root)
                if SOURCE.search(f):
                    problems += check_file(root, folder, path, rel, private)
                elif f == "CMakeLists.txt" and folder in STAGES:
                    problems += check_cmake(folder, path, rel)
    return problems


def without_comments(text):
    """The text with comments and `#if 0` blocks blanked (newlines kept, so lines still count)."""
    blank = lambda m: re.sub(r"[^\n]", " ", m.group(0))
    text = re.sub(r'"(?:\\.|[^"\\\n])*"|/\*.*?\*/|//[^\n]*',
                  lambda m: m.group(0) if m.group(0).startswith('"') else blank(m), text, flags=re.S)
    out, depth = [], 0
    for line in text.split("\n"):
        directive = re.match(r"\s*#\s*(if|ifdef|ifndef|endif)\b\s*(\S*)", line)
        if depth == 0 and directive and directive.group(1) == "if" and directive.group(2) == "0":
            depth = 1
        elif depth and directive:
            depth += 1 if directive.group(1) != "endif" else -1
            line = ""
        if depth:
            line = ""
        out.append(line)
    return "\n".join(out)


def stage_of_path(root, path):
    """(stage, public) of a file in the tree, or (None, False)."""
    rel = os.path.relpath(path, root).split(os.sep)
    if rel[0] not in STAGES:
        return None, False
    return rel[0], len(rel) > 1 and rel[1] == "include"


def check_file(root, folder, path, rel, private):
    out = []
    with open(path, encoding="utf-8", errors="replace") as fh:
        text = without_comments(fh.read())
    in_public = folder in STAGES and stage_of_path(root, path)[1]
    for m in INCLUDE.finditer(text):
        header = m.group(1)
        line = text.count("\n", 0, m.start()) + 1
        where = f"{rel}:{line}: #include \"{header}\""
        stage = stage_of_public(header)
        if stage is not None:
            if stage == "unknown":
                out.append(f"{where}: tinescope/{header.split('/')[1]}/ is no stage ({', '.join(STAGES)})")
                continue
            if not os.path.exists(os.path.join(root, stage, "include", header)):
                out.append(f"{where}: not a public header of {stage}/ ({stage}/include/{header} does not exist)")
                continue
            if folder in STAGES and STAGES.index(stage) > STAGES.index(folder):
                out.append(f"{where}: {folder}/ includes from {stage}/, a later stage")
            continue
        if folder not in STAGES:
            continue  # tests/ and bench/: white-box
        beside = os.path.normpath(os.path.join(os.path.dirname(path), header))
        if os.path.exists(beside):
            # By a path from this file: a file of the tree, whichever folder it is in.
            stage, public = stage_of_path(root, beside)
            if stage is not None and stage != folder:
                if not public:
                    out.append(f"{where}: a private header of {stage}/ (only its public include/tinescope/... is shared)")
                elif STAGES.index(stage) > STAGES.index(folder):
                    out.append(f"{where}: {folder}/ includes from {stage}/, a later stage")
            elif stage == folder and in_public and not public:
                out.append(f"{where}: a public header includes a private one of its own stage")
            continue
        if "/" in header:
            continue  # a path with folders, not in the tree: a library's
        if in_public and folder in private.get(header, set()):
            out.append(f"{where}: a public header includes a private one of its own stage")
            continue
        owners = private.get(header, set()) - {folder}
        if owners:
            out.append(f"{where}: a private header of {', '.join(sorted(owners))}/ (only its public include/tinescope/... is shared)")
    return out


def check_cmake(folder, path, rel):
    out = []
    with open(path, encoding="utf-8") as fh:
        text = fh.read()
    for m in LINK.finditer(text):
        line = text.count("\n", 0, m.start()) + 1
        for target in m.group(1).split():
            stage = TARGETS.get(target)
            if stage and STAGES.index(stage) > STAGES.index(folder):
                out.append(f"{rel}:{line}: {folder}/ links {target}, of {stage}/, a later stage")
    return out


def self_test():
    """A tree with one violation of each kind, and one clean file: each must be found, the clean one not."""
    files = {
        "index/src/good.cpp": '#include "own.hpp"\n#include "tinescope/index/trace_index.hpp"\n#include "tinescope/format.hpp"\n',
        "index/src/own.hpp": "",
        "index/include/tinescope/index/trace_index.hpp": "",
        "recorder/include/tinescope/format.hpp": "",
        "render/include/tinescope/render/picture.hpp": "",
        "import/src/model.hpp": "",
        "index/src/back.cpp": '#include "tinescope/render/picture.hpp"\n',
        "index/src/private.cpp": '#include "model.hpp"\n',
        "import/src/reach.cpp": '#include "tinescope/index/trace_index.hpp"\n',
        "render/src/missing.cpp": '#include "tinescope/render/nothing.hpp"\n',
        "index/CMakeLists.txt": "target_link_libraries(tinescope_index PUBLIC tinescope_reader PRIVATE tinescope_render)\n",
        "tests/white_box.cpp": '#include "own.hpp"\n#include "tinescope/render/picture.hpp"\n',
        "index/src/relative.cpp": '#include "../../import/src/model.hpp"\n',
        "index/src/later.inl": '#include "../../render/include/tinescope/render/picture.hpp"\n',
        "index/include/tinescope/index/exposes.hpp": '#include "own.hpp"\n',
        "index/src/commented.cpp": '// #include "model.hpp"\n/* #include "model.hpp" */\n#if 0\n#include "model.hpp"\n#endif\n',
    }
    expect = [
        "index/src/back.cpp:1", "index/src/private.cpp:1", "import/src/reach.cpp:1",
        "render/src/missing.cpp:1", "index/CMakeLists.txt:1", "index/src/relative.cpp:1", "index/src/later.inl:1",
        "index/include/tinescope/index/exposes.hpp:1",
    ]
    with tempfile.TemporaryDirectory() as root:
        for rel, text in files.items():
            os.makedirs(os.path.dirname(os.path.join(root, rel)), exist_ok=True)
            with open(os.path.join(root, rel), "w") as fh:
                fh.write(text)
        found = check(root)
    ok = True
    for e in expect:
        if not any(p.startswith(e + ":") for p in found):
            print(f"self-test: not found: {e}")
            ok = False
    for p in found:
        if not any(p.startswith(e + ":") for e in expect):
            print(f"self-test: reported wrongly: {p}")
            ok = False
    print("self-test: " + ("every violation found, nothing else" if ok else "FAILED"))
    return 0 if ok else 1


def main():
    if sys.argv[1:] == ["--self-test"]:
        return self_test()
    root = sys.argv[1] if len(sys.argv) > 1 else os.path.join(os.path.dirname(os.path.abspath(__file__)), "..")
    problems = check(os.path.abspath(root))
    for p in problems:
        print(p)
    if problems:
        print(f"check_layout: {len(problems)} include(s) or link(s) against the one-way flow "
              f"({' -> '.join(STAGES)})")
        return 1
    print(f"check_layout: every include and link follows {' -> '.join(STAGES)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
