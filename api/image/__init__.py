"""The image API: a Glance v2 subset served by the API tier under
``/image`` (:mod:`api.image.app`), over the catalogue in the database
(:mod:`common.db.images`) and the store (:mod:`common.images.store`)."""
