package network

import (
	"fmt"
	"net"
	"regexp"

	"github.com/google/nftables"
	"github.com/google/nftables/expr"
)

// multicastNet is 224.0.0.0/4, never masqueraded.
var multicastNet = &net.IPNet{IP: net.IPv4(224, 0, 0, 0).To4(), Mask: net.CIDRMask(4, 32)}

var unsafeTableChars = regexp.MustCompile(`[^A-Za-z0-9_]`)

// masqTableName is the nftables table (family ip) owned by one minicri
// instance: "minicri_<name>", with characters other than [A-Za-z0-9_]
// replaced by '_' so the nft CLI shows it unquoted.
func masqTableName(networkName string) string {
	return "minicri_" + unsafeTableChars.ReplaceAllString(networkName, "_")
}

// installMasquerade replaces the content of table ip <table> with
//
//	chain postrouting { type nat hook postrouting priority srcnat;
//	  ip saddr <subnet> ip daddr != <subnet> ip daddr != 224.0.0.0/4 counter masquerade }
//
// in one nf_tables transaction ("add table; delete table; add table ..."),
// so it is idempotent and never leaves a half-built table.
func installMasquerade(table string, subnet *net.IPNet) error {
	conn, err := nftables.New()
	if err != nil {
		return fmt.Errorf("nftables connection: %w", err)
	}
	t := &nftables.Table{Name: table, Family: nftables.TableFamilyIPv4}
	conn.AddTable(t)
	conn.DelTable(t)
	t = conn.AddTable(&nftables.Table{Name: table, Family: nftables.TableFamilyIPv4})
	ch := conn.AddChain(&nftables.Chain{
		Name:     "postrouting",
		Table:    t,
		Type:     nftables.ChainTypeNAT,
		Hooknum:  nftables.ChainHookPostrouting,
		Priority: nftables.ChainPriorityNATSource,
	})
	exprs := []expr.Any{}
	exprs = append(exprs, matchIPv4Net(12, subnet, expr.CmpOpEq)...)        // ip saddr
	exprs = append(exprs, matchIPv4Net(16, subnet, expr.CmpOpNeq)...)       // ip daddr !=
	exprs = append(exprs, matchIPv4Net(16, multicastNet, expr.CmpOpNeq)...) // ip daddr != 224.0.0.0/4
	exprs = append(exprs, &expr.Counter{}, &expr.Masq{})
	conn.AddRule(&nftables.Rule{Table: t, Chain: ch, Exprs: exprs})
	if err := conn.Flush(); err != nil {
		return fmt.Errorf("install masquerade rule for %s in table ip %s: %w", subnet, table, err)
	}
	return nil
}

// removeMasquerade deletes table ip <table> if it exists.
func removeMasquerade(table string) error {
	conn, err := nftables.New()
	if err != nil {
		return fmt.Errorf("nftables connection: %w", err)
	}
	t := &nftables.Table{Name: table, Family: nftables.TableFamilyIPv4}
	conn.AddTable(t) // makes the delete below succeed when the table is absent
	conn.DelTable(t)
	if err := conn.Flush(); err != nil {
		return fmt.Errorf("delete table ip %s: %w", table, err)
	}
	return nil
}

// matchIPv4Net loads the 4-byte IPv4 address at offset (12 saddr, 16 daddr)
// of the network header, masks it and compares it with n.
func matchIPv4Net(offset uint32, n *net.IPNet, op expr.CmpOp) []expr.Any {
	return []expr.Any{
		&expr.Payload{DestRegister: 1, Base: expr.PayloadBaseNetworkHeader, Offset: offset, Len: 4},
		&expr.Bitwise{SourceRegister: 1, DestRegister: 1, Len: 4, Mask: []byte(n.Mask), Xor: make([]byte, 4)},
		&expr.Cmp{Op: op, Register: 1, Data: n.IP.To4().Mask(n.Mask)},
	}
}
