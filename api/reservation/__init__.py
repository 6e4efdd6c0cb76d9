"""The reservation API: Blazar's v1 host-reservation subset, served on the
compute API's port under ``/reservation`` (:mod:`api.reservation.app`)."""
