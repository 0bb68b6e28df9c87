//! The shard of this process, read from a scheduler's environment
//! (`stormsim run --shard-from-env`):
//!
//! - Kubernetes Indexed Job: `JOB_COMPLETION_INDEX` is the index; the count
//!   comes from `--shard-count N` or `STORMSIM_SHARDS` (Kubernetes does not
//!   export the Job's `completions`).
//! - Slurm job array: `SLURM_ARRAY_TASK_ID`, `SLURM_ARRAY_TASK_COUNT`, and
//!   `SLURM_ARRAY_TASK_MIN` / `SLURM_ARRAY_TASK_STEP` when the array does
//!   not start at 0 or skips ids (`--array=1-16`, `--array=0-30:2`): the
//!   index is `(ID − MIN) ÷ STEP`. `SLURM_ARRAY_TASK_MAX`, when set, must
//!   agree with the count.

use super::ShardSpec;

pub const K8S_INDEX: &str = "JOB_COMPLETION_INDEX";
pub const SHARDS: &str = "STORMSIM_SHARDS";
pub const SLURM_ID: &str = "SLURM_ARRAY_TASK_ID";
pub const SLURM_COUNT: &str = "SLURM_ARRAY_TASK_COUNT";
pub const SLURM_MIN: &str = "SLURM_ARRAY_TASK_MIN";
pub const SLURM_MAX: &str = "SLURM_ARRAY_TASK_MAX";
pub const SLURM_STEP: &str = "SLURM_ARRAY_TASK_STEP";

/// Where the shard came from, for messages.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Source {
    Kubernetes,
    Slurm,
}

/// The shard from the environment (`get` reads a variable; empty values
/// count as unset). `count_flag` is `--shard-count`.
pub fn shard_from_env(
    get: impl Fn(&str) -> Option<String>,
    count_flag: Option<usize>,
) -> Result<(ShardSpec, Source), String> {
    let get = |name: &str| get(name).filter(|v| !v.trim().is_empty());
    match (get(K8S_INDEX), get(SLURM_ID)) {
        (Some(_), Some(_)) => Err(format!(
            "both {K8S_INDEX} (Kubernetes) and {SLURM_ID} (Slurm) are set; \
             unset the one that does not apply"
        )),
        (Some(index), None) => {
            let index = number(K8S_INDEX, &index)?;
            let env_count = get(SHARDS).map(|v| number(SHARDS, &v)).transpose()?;
            let count = match (count_flag, env_count) {
                (Some(f), Some(e)) if f != e => {
                    return Err(format!("--shard-count {f} and {SHARDS}={e} disagree"));
                }
                (Some(n), _) | (None, Some(n)) => n,
                (None, None) => {
                    return Err(format!(
                        "{K8S_INDEX}={index} is set but not the number of shards: pass \
                         --shard-count N or set {SHARDS}=N (the Job's completions; \
                         Kubernetes does not export it)"
                    ));
                }
            };
            let spec =
                ShardSpec::new(index, count).map_err(|e| format!("{K8S_INDEX}={index}: {e}"))?;
            Ok((spec, Source::Kubernetes))
        }
        (None, Some(id)) => {
            let id = number(SLURM_ID, &id)?;
            let count = get(SLURM_COUNT)
                .map(|v| number(SLURM_COUNT, &v))
                .transpose()?
                .ok_or_else(|| {
                    format!(
                        "{SLURM_ID}={id} is set but {SLURM_COUNT} is not (is this a job array?)"
                    )
                })?;
            let min = get(SLURM_MIN)
                .map(|v| number(SLURM_MIN, &v))
                .transpose()?
                .unwrap_or(0);
            let step = get(SLURM_STEP)
                .map(|v| number(SLURM_STEP, &v))
                .transpose()?
                .unwrap_or(1);
            if step == 0 {
                return Err(format!("{SLURM_STEP}=0 is not a valid array step"));
            }
            if id < min || (id - min) % step != 0 {
                return Err(format!(
                    "{SLURM_ID}={id} is not in the array {min}..(step {step}) \
                     ({SLURM_MIN}={min}, {SLURM_STEP}={step})"
                ));
            }
            if let Some(max) = get(SLURM_MAX).map(|v| number(SLURM_MAX, &v)).transpose()? {
                let span = max
                    .checked_sub(min)
                    .map(|d| d / step + 1)
                    .ok_or_else(|| format!("{SLURM_MAX}={max} is below {SLURM_MIN}={min}"))?;
                if span != count {
                    return Err(format!(
                        "{SLURM_MIN}={min}, {SLURM_MAX}={max} and {SLURM_STEP}={step} make \
                         {span} tasks but {SLURM_COUNT}={count}: use a contiguous \
                         array such as --array=0-{}",
                        count.max(1) - 1
                    ));
                }
            }
            if let Some(f) = count_flag
                && f != count
            {
                return Err(format!(
                    "--shard-count {f} and {SLURM_COUNT}={count} disagree"
                ));
            }
            let index = (id - min) / step;
            let spec = ShardSpec::new(index, count).map_err(|e| {
                format!("{SLURM_ID}={id} ({SLURM_MIN}={min}, {SLURM_COUNT}={count}): {e}")
            })?;
            Ok((spec, Source::Slurm))
        }
        (None, None) => Err(format!(
            "--shard-from-env: no shard in the environment: expected {K8S_INDEX} \
             (Kubernetes Indexed Job) or {SLURM_ID} and {SLURM_COUNT} (Slurm job array)"
        )),
    }
}

fn number(name: &str, value: &str) -> Result<usize, String> {
    value
        .trim()
        .parse()
        .map_err(|_| format!("{name}=`{value}` is not a whole number"))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn env<'a>(vars: &'a [(&'a str, &'a str)]) -> impl Fn(&str) -> Option<String> + 'a {
        move |name| {
            vars.iter()
                .find(|(k, _)| *k == name)
                .map(|(_, v)| v.to_string())
        }
    }

    fn spec(i: usize, n: usize) -> ShardSpec {
        ShardSpec::new(i, n).unwrap()
    }

    #[test]
    fn kubernetes_index_with_the_count_from_the_flag_or_the_environment() {
        let vars = [(K8S_INDEX, "3")];
        assert_eq!(
            shard_from_env(env(&vars), Some(5)),
            Ok((spec(3, 5), Source::Kubernetes))
        );
        let vars = [(K8S_INDEX, "3"), (SHARDS, "4")];
        assert_eq!(
            shard_from_env(env(&vars), None),
            Ok((spec(3, 4), Source::Kubernetes))
        );
        assert!(
            shard_from_env(env(&vars), Some(5))
                .unwrap_err()
                .contains("disagree")
        );
        let err = shard_from_env(env(&[(K8S_INDEX, "3")]), None).unwrap_err();
        assert!(
            err.contains("--shard-count") && err.contains(SHARDS),
            "{err}"
        );
        let err = shard_from_env(env(&[(K8S_INDEX, "4")]), Some(4)).unwrap_err();
        assert!(err.contains("out of range"), "{err}");
        let err = shard_from_env(env(&[(K8S_INDEX, "x")]), Some(4)).unwrap_err();
        assert!(err.contains("not a whole number"), "{err}");
    }

    #[test]
    fn slurm_arrays_from_zero_from_one_and_with_a_step() {
        let vars = [(SLURM_ID, "2"), (SLURM_COUNT, "4"), (SLURM_MIN, "0")];
        assert_eq!(
            shard_from_env(env(&vars), None),
            Ok((spec(2, 4), Source::Slurm))
        );
        let vars = [
            (SLURM_ID, "4"),
            (SLURM_COUNT, "4"),
            (SLURM_MIN, "1"),
            (SLURM_MAX, "4"),
        ];
        assert_eq!(
            shard_from_env(env(&vars), Some(4)),
            Ok((spec(3, 4), Source::Slurm))
        );
        let vars = [
            (SLURM_ID, "6"),
            (SLURM_COUNT, "4"),
            (SLURM_MIN, "0"),
            (SLURM_MAX, "6"),
            (SLURM_STEP, "2"),
        ];
        assert_eq!(
            shard_from_env(env(&vars), None),
            Ok((spec(3, 4), Source::Slurm))
        );
    }

    #[test]
    fn inconsistent_slurm_variables_are_errors() {
        let err = shard_from_env(env(&[(SLURM_ID, "1")]), None).unwrap_err();
        assert!(err.contains(SLURM_COUNT), "{err}");
        let vars = [(SLURM_ID, "0"), (SLURM_COUNT, "4"), (SLURM_MIN, "1")];
        assert!(shard_from_env(env(&vars), None).is_err());
        let vars = [(SLURM_ID, "5"), (SLURM_COUNT, "4")];
        assert!(
            shard_from_env(env(&vars), None)
                .unwrap_err()
                .contains("out of range")
        );
        let vars = [(SLURM_ID, "1"), (SLURM_COUNT, "4"), (SLURM_MAX, "9")];
        assert!(
            shard_from_env(env(&vars), None)
                .unwrap_err()
                .contains("make")
        );
        let vars = [(SLURM_ID, "1"), (SLURM_COUNT, "4")];
        assert!(
            shard_from_env(env(&vars), Some(3))
                .unwrap_err()
                .contains("disagree")
        );
    }

    #[test]
    fn none_or_both_schedulers_are_errors() {
        let err = shard_from_env(env(&[]), Some(2)).unwrap_err();
        assert!(err.contains(K8S_INDEX) && err.contains(SLURM_ID), "{err}");
        let vars = [(K8S_INDEX, "0"), (SLURM_ID, "0"), (SLURM_COUNT, "2")];
        assert!(
            shard_from_env(env(&vars), Some(2))
                .unwrap_err()
                .contains("both")
        );
        // Empty values count as unset.
        let vars = [(K8S_INDEX, ""), (SLURM_ID, "1"), (SLURM_COUNT, "2")];
        assert_eq!(
            shard_from_env(env(&vars), None),
            Ok((spec(1, 2), Source::Slurm))
        );
    }
}
