//! Skills: markdown files with a frontmatter block, loaded from a folder (and the built-in `swap` skill).
//!
//! ```text
//! ---
//! name: swap
//! description: Swap one token for another on Base through registers
//! version: 4.0.0
//! required_tools: [local_burner_wallet, token_lookup, to_raw_amount, x402_fetch, token_approve, web3_tx]
//! arguments: [amount, sell_token, buy_token]
//! ---
//! # Swap
//! …instructions for the model…
//! ```
//!
//! `use_skill {name}` puts a skill's instructions into the session's system context and makes its required tools
//! available to the model: value-moving tools are offered to the model only while a skill that requires them is
//! active. A bad frontmatter fails at load with the file, the line and the reason.

use holdfast_core::{AiTool, ErrorCode, ToolContext, ToolError, ToolRegistry};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;

/// The built-in swap skill (`skills/swap.md`), used when no skills folder overrides it.
const BUILTIN_SWAP: &str = include_str!("../../../skills/swap.md");

/// A loaded skill.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Skill {
    /// Name (what `use_skill` takes).
    pub name: String,
    /// One-line description.
    pub description: String,
    /// Version.
    pub version: String,
    /// Tools the skill needs.
    pub required_tools: Vec<String>,
    /// Arguments the skill expects from the user's request.
    pub arguments: Vec<String>,
    /// The instructions (markdown after the frontmatter).
    pub body: String,
    /// Where it came from.
    pub source: String,
}

/// A skill file could not be loaded.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{file}:{line}: {reason}")]
pub struct SkillError {
    /// The file.
    pub file: String,
    /// 1-based line.
    pub line: usize,
    /// What is wrong.
    pub reason: String,
}

fn parse_list(value: &str) -> Option<Vec<String>> {
    let inner = value.trim().strip_prefix('[')?.strip_suffix(']')?;
    Some(inner.split(',').map(|s| s.trim().trim_matches('"').to_owned()).filter(|s| !s.is_empty()).collect())
}

impl Skill {
    /// Parses a skill file's text; `source` names it in errors.
    pub fn parse(source: &str, text: &str) -> Result<Self, SkillError> {
        let err = |line: usize, reason: &str| SkillError { file: source.to_owned(), line, reason: reason.to_owned() };
        let mut lines = text.lines().enumerate();
        match lines.next() {
            Some((_, first)) if first.trim() == "---" => {}
            _ => return Err(err(1, "a skill starts with a `---` frontmatter block")),
        }
        let mut fields: BTreeMap<&str, (usize, &str)> = BTreeMap::new();
        let mut body_start = None;
        for (i, line) in lines.by_ref() {
            let n = i + 1;
            if line.trim() == "---" {
                body_start = Some(i + 1);
                break;
            }
            if line.trim().is_empty() || line.trim_start().starts_with('#') {
                continue;
            }
            let (key, value) = line.split_once(':').ok_or_else(|| err(n, "expected `key: value`"))?;
            let key = key.trim();
            if !["name", "description", "version", "required_tools", "arguments"].contains(&key) {
                return Err(err(
                    n,
                    &format!("unknown key `{key}` (expected name, description, version, required_tools, arguments)"),
                ));
            }
            if fields.insert(key, (n, value.trim())).is_some() {
                return Err(err(n, &format!("`{key}` is given twice")));
            }
        }
        let body_start =
            body_start.ok_or_else(|| err(text.lines().count().max(1), "the frontmatter is not closed with `---`"))?;
        let required = |key: &str| -> Result<String, SkillError> {
            match fields.get(key) {
                Some((n, "")) => Err(err(*n, &format!("`{key}` is empty"))),
                Some((_, v)) => Ok(v.trim_matches('"').to_owned()),
                None => Err(err(1, &format!("missing `{key}`"))),
            }
        };
        let list = |key: &str| -> Result<Vec<String>, SkillError> {
            match fields.get(key) {
                Some((n, v)) => parse_list(v).ok_or_else(|| err(*n, &format!("`{key}` must be a list like [a, b]"))),
                None => Ok(Vec::new()),
            }
        };
        let name = required("name")?;
        if !name.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'_' || b == b'-') {
            return Err(err(
                fields.get("name").map_or(1, |f| f.0),
                "`name` may hold only letters, digits, '_' and '-'",
            ));
        }
        let body: Vec<&str> = text.lines().skip(body_start).collect();
        Ok(Self {
            name,
            description: required("description")?,
            version: required("version")?,
            required_tools: list("required_tools")?,
            arguments: list("arguments")?,
            body: body.join("\n").trim().to_owned(),
            source: source.to_owned(),
        })
    }
}

/// The skills a runtime knows.
#[derive(Debug, Clone, Default)]
pub struct SkillSet {
    skills: BTreeMap<String, Skill>,
}

impl SkillSet {
    /// The built-in skills.
    pub fn builtin() -> Result<Self, SkillError> {
        let mut set = Self::default();
        set.insert(Skill::parse("skills/swap.md (built-in)", BUILTIN_SWAP)?);
        Ok(set)
    }

    /// The built-in skills plus every `*.md` in `dir` (a file overrides a built-in of the same name).
    pub fn load_dir(dir: &Path) -> Result<Self, SkillError> {
        let mut set = Self::builtin()?;
        let io = |e: std::io::Error| SkillError { file: dir.display().to_string(), line: 0, reason: e.to_string() };
        let mut paths: Vec<PathBuf> = std::fs::read_dir(dir)
            .map_err(io)?
            .filter_map(|e| e.ok().map(|e| e.path()))
            .filter(|p| p.extension().is_some_and(|x| x == "md"))
            .collect();
        paths.sort();
        for path in paths {
            let text = std::fs::read_to_string(&path).map_err(|e| SkillError {
                file: path.display().to_string(),
                line: 0,
                reason: e.to_string(),
            })?;
            set.insert(Skill::parse(&path.display().to_string(), &text)?);
        }
        Ok(set)
    }

    /// Adds or replaces a skill.
    pub fn insert(&mut self, skill: Skill) {
        self.skills.insert(skill.name.clone(), skill);
    }

    /// A skill by name.
    pub fn get(&self, name: &str) -> Option<&Skill> {
        self.skills.get(name)
    }

    /// Every skill, by name.
    pub fn iter(&self) -> impl Iterator<Item = &Skill> {
        self.skills.values()
    }
}

/// The skills active in a session, kept in its notes ([`ToolContext::notes`]): saved with the session, so they stay
/// active after a restart or an unload.
#[derive(Debug, Default)]
pub struct ActiveSkills;

/// The session note listing the active skills.
const ACTIVE_SKILLS_NOTE: &str = "active_skills";

impl ActiveSkills {
    /// The active skills of `ctx`, in activation order.
    pub fn of(ctx: &ToolContext) -> Vec<String> {
        ctx.notes.get(ACTIVE_SKILLS_NOTE).and_then(|v| serde_json::from_value(v).ok()).unwrap_or_default()
    }

    fn activate(ctx: &ToolContext, name: &str) -> bool {
        let mut newly = false;
        ctx.notes.update(ACTIVE_SKILLS_NOTE, |slot| {
            let mut list: Vec<String> = slot.take().and_then(|v| serde_json::from_value(v).ok()).unwrap_or_default();
            if !list.iter().any(|n| n == name) {
                list.push(name.to_owned());
                newly = true;
            }
            *slot = Some(serde_json::json!(list));
        });
        newly
    }
}

/// Parameters of `use_skill`.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct UseSkillInput {
    /// The skill's name, e.g. `swap`.
    pub name: String,
}

/// Result of `use_skill`.
#[derive(Debug, Serialize, JsonSchema)]
pub struct UseSkillOutput {
    /// The skill.
    pub name: String,
    /// Its version.
    pub version: String,
    /// Tools now available.
    pub tools: Vec<String>,
    /// False when it was already active.
    pub newly_active: bool,
    /// The instructions (also placed in the system context).
    pub instructions: String,
}

/// The `use_skill` tool.
#[derive(Debug, Clone)]
pub struct UseSkill {
    skills: Arc<SkillSet>,
    registry: ToolRegistry,
}

impl UseSkill {
    /// A `use_skill` over `skills`, checking required tools against `registry`.
    pub fn new(skills: Arc<SkillSet>, registry: ToolRegistry) -> Self {
        Self { skills, registry }
    }
}

impl AiTool for UseSkill {
    type Input = UseSkillInput;
    type Output = UseSkillOutput;

    fn name(&self) -> &str {
        "use_skill"
    }

    fn description(&self) -> &str {
        "Load a skill (e.g. `swap`): its instructions join your context and the tools it needs become available. \
         Load the skill before doing what it covers."
    }

    fn examples(&self) -> Vec<serde_json::Value> {
        vec![serde_json::json!({"name": "swap"})]
    }

    async fn execute(&self, input: UseSkillInput, ctx: &ToolContext) -> Result<UseSkillOutput, ToolError> {
        let skill = self.skills.get(&input.name).ok_or_else(|| {
            let known: Vec<&str> = self.skills.iter().map(|s| s.name.as_str()).collect();
            ToolError::new(
                ErrorCode::NotFound,
                format!("`name`: no skill {:?} (known: {})", input.name, known.join(", ")),
            )
        })?;
        let missing: Vec<&str> =
            skill.required_tools.iter().map(String::as_str).filter(|t| self.registry.get(t).is_none()).collect();
        if !missing.is_empty() {
            return Err(ToolError::new(
                ErrorCode::UnknownTool,
                format!("skill `{}` needs tools this runtime does not have: {}", skill.name, missing.join(", ")),
            ));
        }
        let newly_active = ActiveSkills::activate(ctx, &skill.name);
        Ok(UseSkillOutput {
            name: skill.name.clone(),
            version: skill.version.clone(),
            tools: skill.required_tools.clone(),
            newly_active,
            instructions: skill.body.clone(),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_the_frontmatter() {
        let s = Skill::parse("t.md", "---\nname: swap\ndescription: d\nversion: 1.0.0\nrequired_tools: [a, b]\narguments: [amount]\n---\n# Body\ntext\n").unwrap();
        assert_eq!(s.required_tools, vec!["a", "b"]);
        assert_eq!(s.arguments, vec!["amount"]);
        assert_eq!(s.body, "# Body\ntext");
    }

    #[test]
    fn a_skills_folder_adds_and_overrides_skills_and_a_bad_file_fails_the_load() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("swap.md"), "---\nname: swap\ndescription: mine\nversion: 9\n---\nbody")
            .unwrap();
        std::fs::write(dir.path().join("notes.md"), "---\nname: notes\ndescription: d\nversion: 1\n---\n").unwrap();
        std::fs::write(dir.path().join("readme.txt"), "not a skill").unwrap();
        let set = SkillSet::load_dir(dir.path()).unwrap();
        assert_eq!(set.get("swap").unwrap().version, "9", "a file overrides the built-in");
        assert!(set.get("notes").is_some());
        std::fs::write(dir.path().join("bad.md"), "---\nname: bad\nversion 1\n---\n").unwrap();
        let err = SkillSet::load_dir(dir.path()).unwrap_err();
        assert!(err.file.ends_with("bad.md") && err.line == 3, "{err}");
        assert!(SkillSet::builtin().unwrap().get("swap").unwrap().required_tools.contains(&"web3_tx".to_owned()));
    }

    #[test]
    fn bad_frontmatter_names_the_file_and_line() {
        let cases = [
            ("# no frontmatter", 1, "starts with"),
            ("---\nname: x\ndescription: d\nversion: 1\nrequired_tools: a, b\n---\n", 5, "list"),
            ("---\nname: x\nbogus: 1\n---\n", 3, "unknown key"),
            ("---\nname: x\ndescription: d\n", 3, "not closed"),
            ("---\nname x\n---\n", 2, "key: value"),
            ("---\ndescription: d\nversion: 1\n---\n", 1, "missing `name`"),
        ];
        for (text, line, why) in cases {
            let e = Skill::parse("bad.md", text).unwrap_err();
            assert_eq!((e.file.as_str(), e.line), ("bad.md", line), "{text}: {e}");
            assert!(e.reason.contains(why), "{text}: {e}");
        }
    }
}
