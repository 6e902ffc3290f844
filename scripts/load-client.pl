#!/usr/bin/env perl
# The Perl client of gomogile's load generator (internal/testkit/load,
# `gomogile-bench -perl-client scripts/load-client.pl`): one client process
# running the Go client's workload through MogileFS::Client. It connects,
# prints "ready", waits for a line on stdin, then stores a file of --size
# bytes under a fresh key and asks for its paths, --iterations times (or
# for --seconds), printing each iteration's duration in microseconds on a
# line of its own and "done" at the end. A failure is printed on stderr
# and ends it with status 1.
use strict;
use warnings;
use Getopt::Long;
use Time::HiRes ();
use MogileFS::Client;

my %o = (domain => 'load', class => 'one', size => 4096, prefix => "perl-$$", iterations => 0, seconds => 0);
GetOptions(\%o, 'trackers=s', 'domain=s', 'class=s', 'size=i', 'prefix=s', 'iterations=i', 'seconds=f')
    && $o{trackers} && ($o{iterations} > 0 || $o{seconds} > 0)
    or die "usage: $0 --trackers host:port[,...] (--iterations N | --seconds S) [--domain D] [--class C] [--size BYTES] [--prefix P]\n";

my $mogc = MogileFS::Client->new(domain => $o{domain}, hosts => [split /,/, $o{trackers}])
    or die "load-client: cannot make a client for $o{trackers}\n";
my $unit = 'gomogile load 4k ';
my $data = substr($unit x (int($o{size} / length $unit) + 1), 0, $o{size});

$| = 1;
print "ready\n";
defined <STDIN> or exit 0;
my $end = $o{seconds} > 0 ? Time::HiRes::time() + $o{seconds} : 0;
for (my $i = 0; !$o{iterations} || $i < $o{iterations}; $i++) {
    my $t0 = Time::HiRes::time();
    last if $end && $t0 >= $end;
    my $key = "$o{prefix}-$i";
    my $n = $mogc->store_content($key, $o{class}, $data);
    die "load-client: store $key: " . ($mogc->errstr // 'failed') . "\n" unless defined $n && $n == $o{size};
    my @paths = $mogc->get_paths($key, { noverify => 1 });
    die "load-client: get_paths $key: " . ($mogc->errstr // 'no path') . "\n" unless @paths;
    printf "%d\n", (Time::HiRes::time() - $t0) * 1e6;
}
print "done\n";
