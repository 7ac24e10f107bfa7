"""The tests' password hasher: Django's PBKDF2 at one iteration.

The production hasher takes about a second of CPU per password on this
two-core machine, and the suite signs in and creates users with passwords
thousands of times. What the tests prove (a right password signs in, a
wrong one does not, the limits on failures) does not depend on the hash's
cost. The algorithm's name stays ``pbkdf2_sha256``, and the hash carries its
iteration count, so a server the tests start in a process of its own (with
the production hashers) checks these passwords too."""

from __future__ import annotations

from django.contrib.auth.hashers import PBKDF2PasswordHasher


class OneIterationPBKDF2PasswordHasher(PBKDF2PasswordHasher):
    iterations = 1
