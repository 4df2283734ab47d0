"""Permissions: allow, ask or deny each tool call before it runs, and who answers an ask."""

from ..core._approval import (
    ALLOW,
    ALLOW_ALWAYS,
    DENY,
    Approval,
    ApprovalHandler,
    ApprovalMode,
    ApprovalRequest,
    Approver,
    Decision,
    Ruling,
    approver,
    denial,
)
from ._commands import simple_commands
from ._rules import PermissionRules, Permissions

__all__ = [
    "ALLOW",
    "ALLOW_ALWAYS",
    "DENY",
    "Approval",
    "ApprovalHandler",
    "ApprovalMode",
    "ApprovalRequest",
    "Approver",
    "Decision",
    "PermissionRules",
    "Permissions",
    "Ruling",
    "approver",
    "denial",
    "simple_commands",
]
