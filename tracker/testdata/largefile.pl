#!/usr/bin/perl
# Stores a file with MogileFS::Client's largefile mode (ClientHTTPFile:
# ranged PUTs), as an application using that client would.
# Usage: largefile.pl tracker-host:port domain class key file chunk_size
use strict;
use warnings;
use MogileFS::Client;

my ($tracker, $domain, $class, $key, $file, $chunk) = @ARGV;
my $mogc = MogileFS::Client->new(domain => $domain, hosts => [$tracker]);
my $n = $mogc->store_file($key, $class, $file, { largefile => 1, chunk_size => $chunk });
unless (defined $n) {
    print STDERR "store_file failed: ", ($mogc->errstr || $@ || "unknown"), "\n";
    exit 1;
}
print "$n\n";
