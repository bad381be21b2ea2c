"""``docs/cli.md``, generated from the commands themselves so it cannot drift:
``python -m hivemem.frontends.cli.reference > docs/cli.md`` (a test compares the two)."""

from __future__ import annotations

import click


def _walk(command: click.Command, path: list[str]) -> list[tuple[list[str], click.Command]]:
    out = [(path, command)]
    if isinstance(command, click.Group):
        for name in command.list_commands(click.Context(command)):
            sub = command.get_command(click.Context(command), name)
            if sub is not None and not sub.hidden:
                out.extend(_walk(sub, [*path, name]))
    return out


def markdown() -> str:
    from . import main

    lines = [
        "# Command line reference",
        "",
        "Generated from `hivemem --help` and each command's help; regenerate with",
        "`python -m hivemem.frontends.cli.reference > docs/cli.md`.",
        "",
    ]
    for path, command in _walk(main, ["hivemem"]):
        with click.Context(
            command,
            info_name=" ".join(path),
            terminal_width=88,
            max_content_width=88,
            help_option_names=["-h", "--help"],
        ) as ctx:
            help_text = command.get_help(ctx)
        lines += [f"## `{' '.join(path)}`", "", "```text", help_text.rstrip(), "```", ""]
    return "\n".join(lines)


if __name__ == "__main__":
    print(markdown(), end="")
