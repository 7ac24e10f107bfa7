from django import template

from benchhub.accounts import roles

register = template.Library()


@register.filter
def is_moderator(user) -> bool:
    return roles.is_moderator(user)
