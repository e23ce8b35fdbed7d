"""The environment library: accepted packages kept with the model answers they came from.

:mod:`.archive` packs one environment (package, synth record, spec, answers) as deterministic
``.tar.xz`` bytes; :mod:`.store` adds a synth run to a library directory, checks that every
package is what its answers give, and unpacks packages into a cache to run; :mod:`.readme`
writes the library's README (funnel beside the paper's, cost, environments).
"""

from envcraft.synth.library.archive import ArchiveError, Entry, pack, unpack
from envcraft.synth.library.store import (
    LibraryError,
    add,
    archives,
    check,
    default_root,
    entries,
    read_candidates,
    read_entry,
    replay,
    unpacked,
    write_readme,
)

__all__ = [
    "ArchiveError",
    "Entry",
    "LibraryError",
    "add",
    "archives",
    "check",
    "default_root",
    "entries",
    "pack",
    "read_candidates",
    "read_entry",
    "replay",
    "unpack",
    "unpacked",
    "write_readme",
]
