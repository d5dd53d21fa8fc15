// Package sbatch reads batch scripts and command lines the way Slurm's
// sbatch does: #SBATCH directives (column 0, shell-like quotes and
// escapes, parsing stops at the first command line) and sbatch's option
// table (long and short forms, --opt=val and --opt val, unambiguous long
// prefixes as getopt_long allows). The REST server applies directives to
// unset job fields; `sluice sbatch` uses the same table for its flags.
package sbatch

import (
	"fmt"
	"strings"
)

// magic is the directive prefix; it must start in column 0.
const magic = "#SBATCH"

// DirectiveArgs returns the arguments of a script's #SBATCH lines in order,
// as sbatch builds its argv from them. Parsing stops at the first line
// that is neither blank nor a comment. An unmatched quote is an error
// naming the line, as in sbatch.
func DirectiveArgs(script string) ([]string, error) {
	var args []string
	for lineno, line := range strings.Split(script, "\n") {
		line = strings.TrimSuffix(line, "\r")
		rest, ok := strings.CutPrefix(line, magic)
		if !ok {
			if isCommand(line) {
				break
			}
			continue
		}
		words, err := splitDirective(rest)
		if err != nil {
			return nil, fmt.Errorf("script line %d: %w in %q", lineno+1, err, line)
		}
		args = append(args, words...)
	}
	return args, nil
}

// isCommand reports whether a line is a shell command: anything but blank
// lines and comments.
func isCommand(line string) bool {
	t := strings.TrimLeft(line, " \t\v\f\r")
	return t != "" && t[0] != '#'
}

// splitDirective splits the text after #SBATCH into words: whitespace
// separates, single or double quotes group (and are removed), a backslash
// takes the next character literally, and an unquoted, unescaped '#' starts
// a comment that ends the line.
func splitDirective(s string) ([]string, error) {
	var (
		words   []string
		cur     strings.Builder
		inWord  bool
		quote   byte
		escaped bool
	)
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case escaped:
			escaped = false
		case c == '\\':
			escaped, inWord = true, true
			continue
		case quote != 0:
			if c == quote {
				quote = 0
				continue
			}
		case c == '"' || c == '\'':
			quote, inWord = c, true
			continue
		case c == '#':
			if inWord {
				words = append(words, cur.String())
			}
			return words, nil
		case isSpace(c):
			if inWord {
				words = append(words, cur.String())
				cur.Reset()
				inWord = false
			}
			continue
		}
		cur.WriteByte(c)
		inWord = true
	}
	if quote != 0 {
		return nil, fmt.Errorf("unmatched %c", quote)
	}
	if inWord {
		words = append(words, cur.String())
	}
	return words, nil
}

func isSpace(c byte) bool {
	return c == ' ' || c == '\t' || c == '\v' || c == '\f' || c == '\r'
}
