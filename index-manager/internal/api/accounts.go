package api

import (
	"bufio"
	"crypto/subtle"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"
	"unicode"

	"golang.org/x/crypto/bcrypt"

	"github.com/north-cloud/infrastructure/auth"
)

// RoleAccount is a login with the role its tokens carry.
type RoleAccount struct {
	Account
	Role auth.Role
}

// accountsOf returns every login: the admin account (INDEX_MANAGER_ADMIN_USER,
// role admin) when set, then the accounts file's.
func accountsOf(admin Account, more []RoleAccount) []RoleAccount {
	out := make([]RoleAccount, 0, len(more)+1)
	if admin.Configured() {
		out = append(out, RoleAccount{Account: admin, Role: auth.RoleAdmin})
	}
	return append(out, more...)
}

// lookupAccount returns the account named user. Every name is compared in
// constant time and the whole list is always walked, so timing does not
// tell which user names exist.
func lookupAccount(accounts []RoleAccount, user string) (RoleAccount, bool) {
	var found RoleAccount
	ok := false
	for _, a := range accounts {
		if subtle.ConstantTimeCompare([]byte(user), []byte(a.User)) == 1 && !ok {
			found, ok = a, true
		}
	}
	return found, ok
}

// LoadAccountsFile reads the accounts file named by INDEX_MANAGER_ACCOUNTS_FILE
// (ParseAccounts).
func LoadAccountsFile(path string) ([]RoleAccount, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("accounts file: %w", err)
	}
	defer f.Close()
	accounts, err := ParseAccounts(f)
	if err != nil {
		return nil, fmt.Errorf("accounts file %s: %w", path, err)
	}
	return accounts, nil
}

// ParseAccounts reads one account per line, "name role bcrypt-hash"
// separated by spaces or tabs (blank lines and lines starting with # are
// skipped): a name of printable characters without spaces, one of the
// roles viewer, operator or admin, and a bcrypt hash (index-manager
// hash-password makes one). Every problem is reported with its line
// number, all at once.
func ParseAccounts(r io.Reader) ([]RoleAccount, error) {
	var (
		out  []RoleAccount
		errs []error
		seen = map[string]int{}
	)
	sc := bufio.NewScanner(r)
	for n := 1; sc.Scan(); n++ {
		line := strings.TrimSpace(sc.Text())
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		fields := strings.Fields(line)
		if len(fields) != 3 {
			errs = append(errs, fmt.Errorf("line %d: want \"name role bcrypt-hash\", got %d fields", n, len(fields)))
			continue
		}
		name, roleName, hash := fields[0], fields[1], fields[2]
		if err := checkAccountName(name); err != nil {
			errs = append(errs, fmt.Errorf("line %d: %w", n, err))
			continue
		}
		role, err := auth.ParseRole(roleName)
		if err != nil {
			errs = append(errs, fmt.Errorf("line %d: %w", n, err))
			continue
		}
		if _, err := bcrypt.Cost([]byte(hash)); err != nil {
			errs = append(errs, fmt.Errorf("line %d: the password hash of %s is not a bcrypt hash: %w", n, name, err))
			continue
		}
		if first, dup := seen[name]; dup {
			errs = append(errs, fmt.Errorf("line %d: %s is already on line %d", n, name, first))
			continue
		}
		seen[name] = n
		out = append(out, RoleAccount{Account: Account{User: name, PasswordHash: hash}, Role: role})
	}
	if err := sc.Err(); err != nil {
		errs = append(errs, err)
	}
	return out, errors.Join(errs...)
}

// checkAccountName accepts a name of at most maxUsernameBytes printable
// characters: it becomes the subject of tokens and the actor in the audit
// log.
func checkAccountName(name string) error {
	if len(name) > maxUsernameBytes {
		return fmt.Errorf("name is over %d bytes", maxUsernameBytes)
	}
	for _, r := range name {
		if !unicode.IsGraphic(r) || unicode.IsSpace(r) {
			return fmt.Errorf("name %q holds the character %U", name, r)
		}
	}
	return nil
}

// validateAccounts checks that no file account takes the admin account's
// name.
func validateAccounts(admin Account, more []RoleAccount) error {
	for _, a := range more {
		if admin.Configured() && a.User == admin.User {
			return fmt.Errorf("%s is both the admin account (INDEX_MANAGER_ADMIN_USER) and an account of the accounts file", a.User)
		}
		if !a.Role.Valid() || !a.Configured() {
			return fmt.Errorf("account %q needs a name, a role and a password hash", a.User)
		}
	}
	return nil
}
