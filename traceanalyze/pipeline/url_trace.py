"""`info` of a folder's URL: the rank files copied under `urls.download`'s bounds into a temporary
folder and loaded there with the loader's limits, each `source` the URL again (without credentials)."""

from __future__ import annotations

from pathlib import Path

from traceanalyze.pipeline.urls import SourceUrl, disk_free, download
from traceanalyze.sources import without_credentials


def load_url_trace(url: str, limits):
    """The `Trace` of a folder's (or one file's) URL, as `load.load_trace` gives a local one (what
    `info` shows): each rank file copied under `download`'s bounds into a temporary folder and
    loaded there with the loader's limits, its `source` the URL again (credentials removed)."""
    import dataclasses
    import tempfile

    import fsspec

    from traceanalyze.errors import TraceFormatError
    from traceanalyze.pipeline.executors import url_files
    from traceanalyze.load import load_trace

    files = url_files(url)
    with tempfile.TemporaryDirectory(prefix="traceanalyze-") as folder:
        local = {}
        for index, file_url in enumerate(files):
            path = Path(folder) / f"{index:06d}-{file_url.rstrip('/').rsplit('/', 1)[-1]}"
            try:
                with fsspec.open(file_url, "rb") as source, open(path, "wb") as target:
                    download(source, target, file_url, max_bytes=limits.download_bytes,
                             max_seconds=limits.download_seconds, free_bytes=disk_free(Path(folder)), limits=limits)
            except OSError as error:
                raise TraceFormatError(f"{without_credentials(file_url)}: cannot read: "
                                       f"{without_credentials(str(error.strerror or error))}") from None
            local[path.name] = file_url
        try:
            trace = load_trace(Path(folder) if len(files) > 1 else next(Path(folder).iterdir()), limits=limits,
                               cache=False)
        except TraceFormatError as error:
            message = str(error)
            for name, file_url in local.items():
                message = message.replace(str(Path(folder) / name), without_credentials(file_url))
            raise type(error)(message) from None
    metas = tuple(dataclasses.replace(meta, source=SourceUrl(local.get(meta.source.name, str(meta.source))))
                  for meta in trace.meta)
    return dataclasses.replace(trace, meta=metas)
