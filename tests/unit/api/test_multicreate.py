"""The reservation id of a create (``return_reservation_id``)."""

import collections
import re

from api import multicreate


def test_a_reservation_id_is_r_dash_and_eight_of_a_z_0_9():
    ids = [multicreate.reservation_id() for _ in range(2000)]
    assert all(re.fullmatch(r'r-[a-z0-9]{8}', rid) for rid in ids)
    assert len(set(ids)) == len(ids)


def test_every_character_of_a_reservation_id_is_drawn_from_all_36():
    """Each of the eight positions takes every one of the 36 characters:
    no position is stuck or drawn from part of the alphabet."""
    seen = collections.defaultdict(set)
    for _ in range(3000):
        for position, char in enumerate(multicreate.reservation_id()[2:]):
            seen[position].add(char)
    assert [len(seen[p]) for p in range(8)] == [36] * 8
