# -*- coding: utf-8 -*-
# Copyright: ckptio.nfs contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""checkpoint_canary's places: a work directory (canary_cleanup.Workdir, each with its own cleanup
helper) on every NFS path and, for a burst buffer, on the local path; made, told and finished
together so nothing is left on any of them."""

from __future__ import annotations

import os

from ansible_collections.ckptio.nfs.plugins.module_utils.host.canary.cleanup import WorkdirError


class Places:
    """The NFS work directories (index = a rank's path_index) and the local one or None."""

    def __init__(self, nfs, local=None):
        self.nfs = list(nfs)
        self.local = local
        self.every = self.nfs + ([local] if local is not None else [])
        self.nfs_fds = []
        self.local_fd = None

    def make(self):
        """Make every work directory; one that cannot be made leaves the others to their helpers (sealed)."""
        fds = []
        try:
            for workdir in self.every:
                fds.append(workdir.make())
        except WorkdirError:
            for fd, workdir in zip(fds, self.every):
                os.close(fd)
                workdir.seal()
            raise
        self.nfs_fds = fds[:len(self.nfs)]
        self.local_fd = fds[len(self.nfs)] if self.local is not None else None

    def write_fds(self):
        """Where each path's ranks write: the local work directory for a burst buffer, else their own path's."""
        return [self.local_fd] * len(self.nfs) if self.local is not None else self.nfs_fds

    def control_fds(self):
        return [workdir.control_fd for workdir in self.every if workdir.control_fd is not None]

    def path(self):
        return self.nfs[0].path()

    def tell(self, line):
        for workdir in self.every:
            workdir.tell(line)

    def close_fds(self):
        for fd in self.nfs_fds + ([self.local_fd] if self.local_fd is not None else []):
            os.close(fd)
        self.nfs_fds, self.local_fd = [], None

    def seal(self):
        """Close every control pipe first: a later helper was forked holding the earlier ones' write
        ends, so an earlier helper sees EOF only once the later one has finished too."""
        for workdir in self.every:
            workdir.seal()

    def cleaned_after_failed_start(self):
        self.seal()
        # Every helper is waited for (a list, not a short-circuiting generator).
        cleaned = [workdir.cleaned_after_failed_start() for workdir in self.every]
        return all(cleaned)

    def finish(self, wait_seconds, warn):
        """Finish every work directory: cleaned_up only when all went; the first deferred helper's pid."""
        self.seal()
        outcomes = [workdir.finish(wait_seconds, warn) for workdir in self.every]
        result = {"cleaned_up": all(o["cleaned_up"] for o in outcomes)}
        deferred = [o["cleanup_deferred_pid"] for o in outcomes if o.get("cleanup_deferred_pid")]
        if deferred:
            result["cleanup_deferred_pid"] = deferred[0]
        return result
