"""Permissions: allow, ask or deny each tool call before it runs, and who answers an ask."""

from ..core._approval import (
    ALLOW,
    ALLOW_ALWAYS,
    APPROVAL_MODES,
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
from ._terminal import ask_on_terminal, has_terminal

__all__ = [
    "ALLOW",
    "ALLOW_ALWAYS",
    "APPROVAL_MODES",
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
    "ask_on_terminal",
    "denial",
    "has_terminal",
    "simple_commands",
]
