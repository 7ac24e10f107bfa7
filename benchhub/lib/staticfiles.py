"""Static files: hashed names and compressed copies from collectstatic."""

from django.contrib.staticfiles.storage import HashedFilesMixin
from whitenoise.storage import CompressedManifestStaticFilesStorage


class HashedStaticFilesStorage(CompressedManifestStaticFilesStorage):
    """collectstatic writes every file under a content-hashed name (cached
    for ever by browsers) with gzip and Brotli copies, and a manifest that
    maps names to hashed names.

    Where collectstatic never ran (a checkout, the test suite) there is no
    manifest at all: files keep their plain names and WhiteNoise serves them
    from the source folders (WHITENOISE_USE_FINDERS), instead of every page
    failing on "Missing staticfiles manifest entry". A manifest that lacks
    one file is still an error, as in Django."""

    # CSS url() references are rewritten to hashed names; JavaScript's
    # sourceMappingURL comments are left alone: the vendored libraries ship
    # minified without their .map files, which would fail collectstatic.
    patterns = tuple(entry for entry in HashedFilesMixin.patterns if entry[0] != "*.js")

    def stored_name(self, name: str) -> str:
        if not self.hashed_files:
            return name
        return super().stored_name(name)
