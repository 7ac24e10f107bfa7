"""Who may do what. Roles are Django groups (granted in the admin or with
``manage.py grant_role``), so that an operator needs no code to change them:

- an anonymous reader reads approved results;
- a submitter (any signed-in user) uploads, and sees and hides their own;
- a trusted submitter's uploads are approved on arrival (unless auto-flagged);
- a moderator reviews everyone's submissions and curates dimension values;
- an admin (superuser) is a moderator too, and has the Django admin.
"""

from __future__ import annotations

from collections.abc import Iterable

from django.contrib.auth.models import AbstractBaseUser, AnonymousUser, Group

MODERATORS = "moderators"
TRUSTED_SUBMITTERS = "trusted submitters"
ROLE_GROUPS = {"moderator": MODERATORS, "trusted": TRUSTED_SUBMITTERS}
ROLES = (*ROLE_GROUPS, "admin")


def _group_names(user: AbstractBaseUser | AnonymousUser) -> frozenset[str]:
    """The user's group names, read once per request (cached on the user)."""
    if not user.is_authenticated:
        return frozenset()
    cached = getattr(user, "_benchhub_groups", None)
    if cached is None:
        cached = frozenset(user.groups.values_list("name", flat=True))
        user._benchhub_groups = cached
    return cached


def group_names_remember(user: AbstractBaseUser, names: Iterable[str]) -> None:
    """The user's group names, read along with the user (API token
    authentication does): _group_names asks no more for this request."""
    user._benchhub_groups = frozenset(names)


def is_moderator(user: AbstractBaseUser | AnonymousUser) -> bool:
    return user.is_authenticated and (user.is_superuser or MODERATORS in _group_names(user))


def is_trusted(user: AbstractBaseUser | AnonymousUser) -> bool:
    return user.is_authenticated and TRUSTED_SUBMITTERS in _group_names(user)


def role_grant(*, user: AbstractBaseUser, role: str, revoke: bool = False) -> None:
    if role not in ROLES:
        raise ValueError(f"unknown role {role!r}; one of {', '.join(ROLES)}")
    if role == "admin":
        user.is_staff = user.is_superuser = not revoke
        user.save(update_fields=["is_staff", "is_superuser"])
    else:
        group, _ = Group.objects.get_or_create(name=ROLE_GROUPS[role])
        if revoke:
            user.groups.remove(group)
        else:
            user.groups.add(group)
    user.__dict__.pop("_benchhub_groups", None)


def user_roles(user: AbstractBaseUser | AnonymousUser) -> list[str]:
    if not user.is_authenticated:
        return ["reader"]
    roles = ["submitter"]
    if is_trusted(user):
        roles.append("trusted")
    if is_moderator(user):
        roles.append("moderator")
    if user.is_superuser:
        roles.append("admin")
    return roles
