# -*- coding: utf-8 -*-
# Copyright: ckptio.nfs contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The tuning profiles' data from their one source, module_utils/config/profiles.py.

A step behind ckptio.nfs.internal (role vars only, not for direct use); its documentation is in
tuning_profile.yml next to this one.
"""

from __future__ import annotations

from ansible.errors import AnsibleFilterError

from ansible_collections.ckptio.nfs.plugins.module_utils.config import profiles


def tuning_profile(name, side):
    try:
        return profiles.profile(name, side)
    except profiles.ProfileError as exc:
        raise AnsibleFilterError("tuning_profile: %s" % exc)


# The step ckptio.nfs.internal calls, by name.
STEPS = {"tuning_profile": tuning_profile}
