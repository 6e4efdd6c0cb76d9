"""The upload's read-ahead (api.image.data._ReadAhead): the chunks come in
order and stop at the end, a read's error reaches the consumer, and a
consumer that stops early (a refused upload) leaves no thread reading the
connection."""

import threading

import pytest

from api.image import data


def reads(items):
    """A read() answering ``items`` one by one (an exception is raised),
    then b'' for ever; and how many times it was called."""
    it = iter(items)
    calls = []

    def read():
        calls.append(1)
        item = next(it, b'')
        if isinstance(item, BaseException):
            raise item
        return item
    return read, calls


def test_chunks_come_in_order_until_the_end():
    read, _ = reads([b'a', b'bc', b'def'])
    ahead = data._ReadAhead(read, 2)
    assert list(ahead) == [b'a', b'bc', b'def']
    ahead.close()


def test_an_error_of_a_read_reaches_the_consumer_after_the_chunks_before():
    read, _ = reads([b'a', OSError('gone')])
    ahead = data._ReadAhead(read, 4)
    got = []
    with pytest.raises(OSError, match='gone'):
        for chunk in ahead:
            got.append(chunk)
    assert got == [b'a']
    ahead.close()


def test_a_consumer_that_stops_early_stops_the_reads():
    read, calls = reads([b'x'] * 1000)
    ahead = data._ReadAhead(read, 2)
    assert next(iter(ahead)) == b'x'
    ahead.close()
    assert not ahead._thread.is_alive()
    # at most the queue's depth and the one in hand were read ahead
    assert len(calls) <= 1 + 2 + 2
    names = [t.name for t in threading.enumerate()]
    assert 'image-upload-reader' not in names
