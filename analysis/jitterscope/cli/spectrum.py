"""``jitterscope spectrum``: periodic disturbances per thread, as a peak table or JSON."""

from __future__ import annotations

import argparse

from .options import input_path, number, print_json


def register(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser(
        "spectrum", help="periodic disturbances: significant spectral peaks, harmonics, aliases, likely sources",
    )
    parser.add_argument("dataset", type=input_path, help="dataset file or directory")
    parser.add_argument("--json", action="store_true", help="print the full results (spectra included) as JSON")
    parser.add_argument("--method", choices=("auto", "welch", "lombscargle"), default="auto",
                        help="auto: Welch on the wake-up index, Lomb-Scargle when there are gaps (default)")
    parser.add_argument("--nperseg", type=number(integer=True, min=8, max=2**31), metavar="N",
                        help="Welch segment length (default: n/16, 64..4096)")
    parser.add_argument("--average", choices=("mean", "median"), default="mean", help="Welch averaging")
    parser.add_argument("--alpha", type=number(min=0, max=1, inclusive=False), default=0.01,
                        help="false-alarm probability of a peak (0.01)")
    parser.add_argument("--sources", default="", metavar="NAME=HZ,...",
                        help="your candidate sources, e.g. 'smi=0.5,nic=77' (tried before the built-in ones)")
    parser.add_argument("--spike-threshold-us", type=number(min=0, max=1e12, inclusive=False, unit="µs"), metavar="US",
                        help="latency above which a wake-up is a spike (default: median + 10 IQR)")
    parser.add_argument("--top", type=number(integer=True, min=1, max=100_000), default=20, metavar="K",
                        help="peaks shown per thread (default 20)")
    parser.set_defaults(func=_run)


def _run(args: argparse.Namespace) -> int:
    from ..dataset import open_dataset
    from ..spectrum import SpectralOptions, analyze_spectra, format_spectral_analysis, parse_sources
    options = SpectralOptions(
        nperseg=args.nperseg, average=args.average, alpha=args.alpha, method=args.method,
        spike_threshold_ns=None if args.spike_threshold_us is None else args.spike_threshold_us * 1000,
    )
    dataset = open_dataset(args.dataset)
    if dataset.metadata.kind == "poll":
        from .pollview import poll_periodic, refuse_timer_options
        refuse_timer_options(args, "spectrum", {"nperseg": None, "sources": "", "spike_threshold_us": None,
                                                "method": "auto", "average": "mean"})
        return poll_periodic(dataset, args)
    analysis = analyze_spectra(dataset, options, sources=parse_sources(args.sources))
    if args.json:
        print_json(analysis.to_json(), allow_nan=False)
    else:
        print(format_spectral_analysis(analysis, top=args.top))
    return 0
