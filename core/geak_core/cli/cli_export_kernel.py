"""``geak-core export-kernel``: a run's best kernel for a KernelBench-format task, as a
pip-installable package around a PyTorch custom op."""

from __future__ import annotations

import click


@click.command("export-kernel", short_help="A run's best kernel as an installable op.")
@click.argument("run_ref", metavar="RUN")
@click.option("--task", "task_id", metavar="T",
              help="The task (default: the run's one task with a correct candidate).")
@click.option("-o", "--out", "out", required=True, type=click.Path(file_okay=False),
              help="The package's folder: absent or empty (or --force).")
@click.option("--namespace", default="geak", show_default=True,
              help="The op's namespace: torch.ops.<namespace>.<name>.")
@click.option("--name", help="The op's name (default: from the task id, 19_ReLU -> relu).")
@click.option("--candidate", "candidate_id", metavar="ID",
              help="Export this correct candidate instead of the task's best.")
@click.option("--force", is_flag=True, help="Replace the contents of a folder that is not empty.")
@click.option("--output-dir", default="runs", show_default=True, type=click.Path(file_okay=False),
              help="Where run ids are looked up (a run may also be given as its folder).")
def export_kernel_command(run_ref: str, task_id: str | None, out: str, namespace: str, name: str | None,
                          candidate_id: str | None, force: bool, output_dir: str) -> None:
    """Write RUN's (id, unique prefix or folder) best correct kernel for a KernelBench-format
    task as an installable package in OUT: the kernel module, the task's reference, a
    torch.library custom op torch.ops.<namespace>.<name> (weights as arguments, a fake
    implementation for torch.compile), a drop-in ModelNew, a pytest file, a benchmark
    script, pyproject.toml, README.md and provenance.json (docs/export.md)."""
    from geak_core.engine.store import resolve_run
    from geak_core.reporting.kernel_package import export_kernel
    from geak_core.reporting.rundata import load_run

    run = load_run(resolve_run(run_ref, output_dir))
    written = export_kernel(run, out, task_id=task_id, candidate_id=candidate_id, namespace=namespace,
                            name=name, force=force)
    click.echo(f"wrote {written.folder}/: torch.ops.{written.qualname.replace('::', '.')} "
               f"(task {written.task_id}, candidate {written.candidate_id})")
    click.echo(f"  pip install {written.folder}; import {written.package}; "
               f"python -m pytest {written.folder}/tests; python -m {written.package}.benchmark")
