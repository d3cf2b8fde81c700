# SPDX-License-Identifier: MIT
# bash completion for ptc(1). The options are those of each subcommand's --help
# (tests/integration/test_completions.py checks both ways).

_ptc_tools="patch read_file search_files terminal web_extract web_search write_file"

_ptc()
{
        local cur prev words cword
        if declare -F _init_completion >/dev/null; then
                _init_completion || return
        else
                cur=${COMP_WORDS[COMP_CWORD]}
                prev=${COMP_WORDS[COMP_CWORD - 1]}
                words=("${COMP_WORDS[@]}")
                cword=$COMP_CWORD
        fi

        local cmds="run schema stubs tool mcp doctor agent serve session policy"
        local cmd="" i
        for ((i = 1; i < cword; i++)); do
                case ${words[i]} in
                -*) ;;
                *) cmd=${words[i]}; break ;;
                esac
        done

        if [[ -z $cmd ]]; then
                COMPREPLY=($(compgen -W "$cmds --help --version -h -V" -- "$cur"))
                return
        fi

        local opts
        case $cmd in
        run) opts="-c --tools --timeout --max-tool-calls --mode --cwd --config --isolation
                   --backend --remote-cwd --log --pretty --progress-fd --events --quiet --trace --session --reset --server --no-server
                   --help -h" ;;
        schema | stubs) opts="--tools --mode --config --compact --help -h" ;;
        tool) opts="--config --cwd --pretty --help -h" ;;
        mcp) opts="--config --tools --mode --cwd --timeout --max-tool-calls --isolation
                   --backend --remote-cwd --sessions --expose-tools --help -h" ;;
        doctor) opts="--config --backend --help -h" ;;
        agent) opts="--help -h" ;;
        serve) opts="--config --idle --ready-fd --help -h" ;;
        session) opts="list kill reset fork --pretty --help -h" ;;
        policy) opts="check --config --cwd --pretty --help -h" ;;
        *) return ;;
        esac

        case $prev in
        --config)
                COMPREPLY=($(compgen -f -- "$cur"))
                return ;;
        --cwd)
                COMPREPLY=($(compgen -d -- "$cur"))
                return ;;
        --mode)
                COMPREPLY=($(compgen -W "project strict" -- "$cur"))
                return ;;
        --isolation)
                COMPREPLY=($(compgen -W "none auto strict" -- "$cur"))
                return ;;
        --sessions)
                COMPREPLY=($(compgen -W "none conversation" -- "$cur"))
                return ;;
        --tools)
                # A comma-separated list: complete the last name.
                local head=""
                [[ $cur == *,* ]] && head=${cur%,*},
                COMPREPLY=($(compgen -P "$head" -W "$_ptc_tools" -- "${cur##*,}"))
                return ;;
        --backend)
                COMPREPLY=($(compgen -W "local ssh: docker: podman: kubectl: apptainer: exec:" \
                        -- "$cur"))
                compopt -o nospace 2>/dev/null
                return ;;
        --timeout | --max-tool-calls | --progress-fd | --remote-cwd | --session | --idle | \
                --ready-fd | -c)
                return ;;
        esac

        if [[ $cur == -* ]]; then
                COMPREPLY=($(compgen -W "$opts" -- "$cur"))
        elif [[ $cmd == tool ]]; then
                COMPREPLY=($(compgen -W "$_ptc_tools" -- "$cur"))
        elif [[ $cmd == run ]]; then
                COMPREPLY=($(compgen -f -- "$cur"))
        fi
}

complete -F _ptc ptc
