"""``jitterscope simulate``: write a synthetic dataset with planted effects."""

from __future__ import annotations

import argparse
from typing import TYPE_CHECKING

from .options import DURATION_HELP, duration, input_path, number, output_path, print_json, seed, usage_error

if TYPE_CHECKING:  # for annotations only: the implementation is imported when the command runs
    from ..io import Effect, SimulationSpec



def register(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser(
        "simulate", help="write a synthetic dataset with planted, known effects",
        description="Write a synthetic dataset (kind 'simulation') from options or a JSON spec (--spec); "
                    "the planted ground truth goes into its metadata.",
    )
    parser.add_argument("-o", "--output", type=output_path, required=True, help="Parquet file to write")
    parser.add_argument("--spec", type=input_path,
                        help="JSON spec file (see jitterscope.io.simulate); other shape options are ignored")
    parser.add_argument("--seed", type=seed(), default=0, help="random seed (default 0)")
    parser.add_argument("--force", action="store_true", help="overwrite OUTPUT")
    parser.add_argument("--print-spec", action="store_true", help="print the spec as JSON and write nothing")
    shape = parser.add_argument_group("shape (without --spec)")
    shape.add_argument("--threads", type=number(integer=True, min=1, max=1024), default=2,
                       help="threads, one per CPU (default 2)")
    shape.add_argument("--interval-us", type=number(min=1, max=1e9, unit="µs"), default=1000.0,
                       help="timer interval in µs (default 1000)")
    length = shape.add_mutually_exclusive_group()
    length.add_argument("--samples", type=number(integer=True, min=1, max=10**10),
                        help="wake-ups per thread (default 10000)")
    length.add_argument("-D", "--duration", type=duration(max=10**7), metavar="DURATION",
                        help=f"length of the run per thread: {DURATION_HELP}")
    shape.add_argument("--distribution", default="lognormal", choices=("lognormal", "gamma", "exponential", "constant"))
    shape.add_argument("--median-us", type=number(min=0, max=1e9, unit="µs"), default=3.0,
                       help="median base latency in µs (default 3)")
    shape.add_argument("--spread", type=number(min=0, max=100), default=0.3,
                       help="lognormal sigma or gamma CV (default 0.3)")
    shape.add_argument("--governor", default="performance", help="governor recorded in the environment")
    effects = parser.add_argument_group("effects (repeatable where it makes sense)")
    effects.add_argument("--periodic", action="append", default=[], metavar="HZ:AMP_US[:WIDTH_US]",
                         help="periodic spikes at HZ adding AMP_US to wake-ups within WIDTH_US (default one interval)")
    effects.add_argument("--pstates", metavar="MHZ,MHZ,...", help="frequency levels cycled through")
    effects.add_argument("--dwell-ms", type=number(min=0, max=1e9, inclusive=False, unit="ms"), default=500.0,
                         help="dwell per level in ms (default 500)")
    effects.add_argument("--coupling", metavar="P:AMP_US:K",
                         help="with probability P a transition adds AMP_US to the wake-ups within ±K of it")
    effects.add_argument("--smi", metavar="RATE_HZ:DURATION_US", help="SMIs: Poisson rate and duration")
    effects.add_argument("--idle", metavar="P:EXIT_US",
                         help="deep idle before a wake-up with probability P, costing EXIT_US of latency")
    effects.add_argument("--stalls", type=number(min=0, max=1), metavar="P",
                         help="probability per wake-up of a 2.5-period stall")
    effects.add_argument("--drops", type=number(min=0, max=1), metavar="P",
                         help="probability per row of a burst of drops")
    poll = parser.add_argument_group("busy-poll mode (--mode poll: a dataset of kind poll, written as a directory)")
    poll.add_argument("--mode", choices=("timer", "poll"), default="timer",
                      help="timer wake-ups (default) or a busy-poll loop's interruptions")
    poll.add_argument("--cpus", metavar="LIST", default="1", help="with --mode poll: polled CPUs, e.g. 1 or 0,1 "
                      "(default 1)")
    poll.add_argument("--poll-threshold", type=number(integer=True, min=2, max=10**9, unit="ns"), default=1000,
                      metavar="NS", help="with --mode poll: a gap of at least NS ns is an interruption (default 1000)")
    poll.add_argument("--tick", metavar="HZ:US", default="250:2",
                      help="with --mode poll: the scheduler tick, HZ a second of US µs each (default 250:2; "
                           "'off' for none); HZ is recorded as CONFIG_HZ")
    poll.add_argument("--throttle", metavar="RUNTIME_US:PERIOD_US", default="950000:1000000",
                      help="with --mode poll: RT throttling, stopping the loop PERIOD-RUNTIME µs each period "
                           "(default 950000:1000000, the kernel's; 'off' for none)")
    poll.add_argument("--irq", action="append", default=[], metavar="HZ:US[:NAME]",
                      help="with --mode poll: a periodic IRQ of US µs at HZ (repeatable)")
    poll.add_argument("--bursts", metavar="RATE_HZ:US[:COMMAND]",
                      help="with --mode poll: a thread preempting the loop at random (Poisson RATE_HZ) for about US µs")
    poll.add_argument("--hardware", metavar="RATE_HZ:US",
                      help="with --mode poll: random gaps of about US µs that no kernel event covers (SMI, hypervisor)")
    poll.add_argument("--trace", action="store_true",
                      help="with --mode poll: also write the kernel events that explain each planted gap (_trace/)")
    parser.set_defaults(func=_run)


POLL_ONLY = ("cpus", "poll_threshold", "tick", "throttle", "irq", "bursts", "hardware", "trace")


def _run(args: argparse.Namespace) -> int:
    if args.mode == "poll":
        return _run_poll(args)
    changed = [name for name in POLL_ONLY if getattr(args, name) != _DEFAULTS.get(name)]
    if changed:
        usage_error(PROG, f"--{changed[0].replace('_', '-')} goes with --mode poll")
    from ..io import load_spec, write_simulation
    spec = load_spec(args.spec) if args.spec else _spec_from_args(args)
    if args.print_spec:
        print_json(spec.to_json(), indent=2)
        return 0
    path = write_simulation(spec, args.output, args.seed, overwrite=args.force,
                            inputs=[args.spec] if args.spec else ())
    print(f"wrote {path}: {spec.threads} thread(s) x {spec.slots_per_thread} wake-ups, seed {args.seed}")
    return 0


def _spec_from_args(args: argparse.Namespace) -> SimulationSpec:
    from ..io import BaseLatency, SpecError, spec_from_options
    interval_ns = round(args.interval_us * 1000)
    duration_ns = None if args.duration is None else round(args.duration * 1e9)
    samples = None if duration_ns is not None else (args.samples if args.samples is not None else 10_000)
    # the options built the spec: what is wrong with it is a usage error (exit 2), naming the effect and field
    try:
        base = BaseLatency(distribution=args.distribution, median_ns=args.median_us * 1000, spread=args.spread)
        effects = _effects(args, interval_ns)
        return spec_from_options(threads=args.threads, interval_ns=interval_ns, samples=samples,
                                 duration_ns=duration_ns, base=base, effects=effects, governor=args.governor)
    except (ValueError, SpecError) as exc:
        usage_error(PROG, str(exc).removeprefix("simulation spec: "))


PROG = "jitterscope simulate"


def _numbers(text: str, option: str, count: tuple[int, int], separator: str = ":") -> list[float]:
    parse = number()  # the one number parser of every option: NaN and ±inf refused
    try:
        values = [float(parse(part)) for part in text.split(separator)]
    except argparse.ArgumentTypeError:
        values = []
    if not values or not count[0] <= len(values) <= count[1]:
        usage_error(PROG, f"argument {option}: {text!r}: expected {count[0]}" + (f" to {count[1]}" if count[1] !=
                    count[0] else "") + f" finite numbers separated by {separator!r}")
    return values


def _effects(args: argparse.Namespace, interval_ns: int) -> list[Effect]:
    from ..io import Drops, IdleStates, PeriodicDisturbance, PStates, SMIs, Stalls
    effects: list[Effect] = []
    for text in args.periodic:
        values = _numbers(text, "--periodic", (2, 3))
        width = values[2] * 1000 if len(values) == 3 else interval_ns
        effects.append(PeriodicDisturbance(frequency_hz=values[0], amplitude_ns=values[1] * 1000, width_ns=width))
    if args.pstates:
        levels = tuple(_numbers(args.pstates, "--pstates", (1, 10_000), ","))
        coupling = _numbers(args.coupling, "--coupling", (3, 3)) if args.coupling else [0.0, 0.0, 0]
        effects.append(PStates(levels_mhz=levels, dwell_ns=tuple([round(args.dwell_ms * 1e6)] * len(levels)),
                               coupling_probability=coupling[0], coupling_amplitude_ns=coupling[1] * 1000,
                               coupling_window=int(coupling[2])))
    elif args.coupling:
        usage_error(PROG, "--coupling needs --pstates (the transitions it couples to)")
    if args.smi:
        rate, duration = _numbers(args.smi, "--smi", (2, 2))
        effects.append(SMIs(rate_hz=rate, duration_ns=round(duration * 1000)))
    if args.idle:
        probability, exit_us = _numbers(args.idle, "--idle", (2, 2))
        effects.append(IdleStates(deep_probability=probability, exit_latency_ns=exit_us * 1000))
    if args.stalls is not None:
        effects.append(Stalls(probability=args.stalls))
    if args.drops is not None:
        effects.append(Drops(probability=args.drops))
    return effects


_DEFAULTS = {"cpus": "1", "poll_threshold": 1000, "tick": "250:2", "throttle": "950000:1000000", "irq": [],
             "bursts": None, "hardware": None, "trace": False}


def _run_poll(args: argparse.Namespace) -> int:
    """``--mode poll``: the options to a PollSpec (usage errors exit 2), then the library writes the dataset."""
    from ..io import PeriodicIrq, PollSpecError, poll_spec_from_options, simulate_poll
    if args.spec:
        usage_error(PROG, "--spec describes a timer simulation; --mode poll takes its shape from the options")
    try:
        cpus = [int(c) for c in args.cpus.split(",")]
    except ValueError:
        usage_error(PROG, f"argument --cpus: {args.cpus!r} is not a comma-separated list of CPU numbers")
    tick_hz, tick_ns = (None, 2000) if args.tick == "off" else _pair(args.tick, "--tick", 1000)
    throttle = None if args.throttle == "off" else tuple(int(v) for v in _numbers(args.throttle, "--throttle", (2, 2)))
    irqs = []
    for text in args.irq:
        head, _, name = text.partition(":")
        rest, _, name = name.partition(":")
        hz, us = _numbers(f"{head}:{rest}", "--irq", (2, 2))
        irqs.append(PeriodicIrq(hz=hz, duration_ns=round(us * 1000), name=name or "eth0"))
    burst = None
    if args.bursts:
        rate, _, rest = args.bursts.partition(":")
        us, _, command = rest.partition(":")
        values = _numbers(f"{rate}:{us}", "--bursts", (2, 2))
        burst = (values[0], round(values[1] * 1000), command or "kworker/1:1")
    hardware = None
    if args.hardware:
        rate, us = _numbers(args.hardware, "--hardware", (2, 2))
        hardware = (rate, round(us * 1000))
    duration_s = 10.0 if args.duration is None else args.duration
    try:
        spec = poll_spec_from_options(cpus=cpus, duration_s=duration_s, threshold_ns=args.poll_threshold,
                                      tick_hz=tick_hz, tick_ns=tick_ns, throttle=throttle, irqs=irqs, burst=burst,
                                      hardware=hardware, trace=args.trace)
    except PollSpecError as exc:
        usage_error(PROG, str(exc).removeprefix("poll simulation: "))
    if args.print_spec:
        print_json(spec.to_json(), indent=2)
        return 0
    path = simulate_poll(spec, args.output, args.seed, overwrite=args.force)
    print(f"wrote {path}: {len(cpus)} polled CPU(s) x {duration_s:g} s, seed {args.seed}")
    return 0


def _pair(text: str, option: str, scale: float) -> tuple[float, int]:
    first, second = _numbers(text, option, (2, 2))
    return first, round(second * scale)
