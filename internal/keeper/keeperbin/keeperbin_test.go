package keeperbin

import "testing"

func TestEmbeddedKeeperIsCurrent(t *testing.T) {
	sum, err := HashSources(".")
	if err != nil {
		t.Fatal(err)
	}
	if sum != BuiltFrom {
		t.Fatal("the embedded keeper is older than its sources: run go generate ./internal/keeper/keeperbin")
	}
}

func TestBinariesUnpack(t *testing.T) {
	for _, arch := range []string{"amd64", "arm64"} {
		b, err := For(arch)
		if err != nil || len(b.Data) < 1000 || string(b.Data[1:4]) != "ELF" || len(b.Digest) != 64 {
			t.Fatalf("For(%s) = %d bytes, digest %q, %v", arch, len(b.Data), b.Digest, err)
		}
	}
	if _, err := For("mips"); err == nil {
		t.Fatal("For(mips) succeeded")
	}
}

func TestDigestForIsTheUnpackedDigest(t *testing.T) {
	for _, arch := range []string{"amd64", "arm64"} {
		b, err := For(arch)
		if err != nil {
			t.Fatal(err)
		}
		if d, err := DigestFor(arch); err != nil || d != b.Digest {
			t.Fatalf("DigestFor(%s) = %q, %v; For's digest %q", arch, d, err, b.Digest)
		}
		if l, err := Load(arch); err != nil || l.Digest != b.Digest || len(l.Data) != len(b.Data) {
			t.Fatalf("Load(%s) = %d bytes, digest %q, %v; For's %d, %q", arch, len(l.Data), l.Digest, err, len(b.Data), b.Digest)
		}
	}
	if _, err := DigestFor("mips"); err == nil {
		t.Fatal("DigestFor(mips) succeeded")
	}
	if _, err := Load("mips"); err == nil {
		t.Fatal("Load(mips) succeeded")
	}
}
