"""Deleting an image's stored data from the conductor (a shelved server's
snapshot, a cold migration's temporary image): the store is opened on
first use only, so a conductor that never deletes data never opens it."""

from common.db import images as images_db


class DataRemover:
    def __init__(self, conf):
        self.conf = conf
        self._store = None

    def remove(self, before):
        """Delete the data of ``before`` (the image row as it was before
        its delete), if it had any in the store."""
        location = images_db.stored_location(before)
        if location is None:
            return
        if self._store is None:
            from common.images import store as store_mod
            self._store = store_mod.ImageStore(self.conf)
        self._store.delete(location)
